# Copyright 2026 The espo-operator Authors. Licensed under the Apache License, Version 2.0.
"""Writes a Hugging Face model of a real architecture with a tiny random config, and
its tokenizer (and, for a VLM, its processor), to a folder with save_pretrained: what
the worker's tests, the local-mode end-to-end test and hack/gpu-check.sh load through
the worker's own local-files-only path, with nothing to download.

    python3 -m tests.random_models OUT [--arch qwen2_5_vl|qwen2_vl|qwen3|qwen2] [--hidden H] [--layers N]

The tokenizer is a byte-level BPE trained here on GUI-R1-style text, with Qwen's
special tokens and Qwen's chat template (the parts of it a system and a user turn,
text and images, use); a VLM's image processor is Qwen2-VL's with a small pixel budget.
"""

import argparse
import os

CHAT_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}"
    "{% else %}{% for c in message['content'] %}"
    "{% if c['type'] == 'image' %}<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif c['type'] == 'text' %}{{ c['text'] }}{% endif %}{% endfor %}{% endif %}"
    "<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")

SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|vision_end|>",
           "<|image_pad|>", "<|video_pad|>"]

CORPUS = [
    "<think>the user wants a hotel</think><answer>[{'action': 'click', 'point': [0.52, 0.31], "
    "'input_text': 'no input text'}]</answer>",
    "<answer>[{'action': 'type', 'point': [0.5, 0.1], 'input_text': 'New York'}]</answer>",
    "<answer>[{'action': 'scroll', 'point': [-100, -100], 'input_text': 'down'}]</answer>",
    "<answer>[{'action': 'pool_found', 'point': [-100, -100], 'input_text': 'a quiet hotel near the park'}]</answer>",
    "<answer>[{'action': 'recommendation', 'point': [-100, -100], 'input_text': 'Yes'}]</answer>",
    "Instruction: I'm going to New York next week, any hotel? Screen elements: e1 button \"Search\" "
    "[0.1,0.2,0.3,0.25] History: 1. click [0.2, 0.225] \"no input text\" on button \"Search\"",
    "food hotel flight movie travel medicine price rating distance stars breakfast Yes No",
]


def tokenizer(out):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=1024, special_tokens=SPECIAL,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(CORPUS * 20, trainer=trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>",
                                   additional_special_tokens=SPECIAL[1:])
    fast.chat_template = CHAT_TEMPLATE
    return fast


def video_kwargs(tf):
    """transformers 5 wants a video processor beside the image one; 4.x has none."""
    cls = getattr(tf, "Qwen2VLVideoProcessor", None)
    return {"video_processor": cls()} if cls is not None else {}


ARCHS = ("qwen2_5_vl", "qwen2_vl", "qwen3", "qwen2")


def build(out, arch, seed=0, hidden=128, layers=2):
    """Writes a random model of arch (one of ARCHS) to the folder out, the same weights
    for the same seed, and returns its parameter count. hidden (a multiple of 64: heads
    of 32 dimensions, half as many key-value heads) and layers size the language model;
    the defaults are the tests' tiny one (the step benchmark, bench/, takes a larger)."""
    if hidden < 64 or hidden % 64:
        raise ValueError("hidden %d: want a multiple of 64" % hidden)
    import torch
    import transformers as tf
    torch.manual_seed(seed)
    tok = tokenizer(out)
    ids = {t: tok.convert_tokens_to_ids(t) for t in SPECIAL}
    common = dict(vocab_size=len(tok), hidden_size=hidden, intermediate_size=2 * hidden, num_hidden_layers=layers,
                  num_attention_heads=hidden // 32, num_key_value_heads=hidden // 64, max_position_embeddings=4096,
                  bos_token_id=ids["<|endoftext|>"], eos_token_id=ids["<|im_end|>"], pad_token_id=ids["<|endoftext|>"],
                  tie_word_embeddings=True)
    text = dict(common, rope_scaling={"type": "mrope", "mrope_section": [4, 6, 6]},  # 2 * 16 = head dim 32
                vision_start_token_id=ids["<|vision_start|>"], vision_end_token_id=ids["<|vision_end|>"],
                image_token_id=ids["<|image_pad|>"], video_token_id=ids["<|video_pad|>"])
    proc = None
    if arch in ("qwen3", "qwen2"):
        cfg = (tf.Qwen3Config(head_dim=32, **common) if arch == "qwen3" else tf.Qwen2Config(**common))
        model = tf.AutoModelForCausalLM.from_config(cfg)
    elif arch == "qwen2_vl":
        vision = dict(depth=2, embed_dim=64, hidden_size=hidden, num_heads=4, mlp_ratio=2, patch_size=14,
                      spatial_merge_size=2, temporal_patch_size=2, in_channels=3)
        cfg = tf.Qwen2VLConfig(vision_config=vision, **text)
        model = tf.Qwen2VLForConditionalGeneration(cfg)
        ip = tf.Qwen2VLImageProcessor(min_pixels=56 * 56, max_pixels=224 * 224)
        proc = tf.Qwen2VLProcessor(image_processor=ip, tokenizer=tok, chat_template=CHAT_TEMPLATE, **video_kwargs(tf))
    elif arch == "qwen2_5_vl":
        vision = dict(depth=2, hidden_size=64, out_hidden_size=hidden, num_heads=4, intermediate_size=128,
                      patch_size=14, spatial_merge_size=2, temporal_patch_size=2, window_size=56,
                      fullatt_block_indexes=[1], in_channels=3)
        cfg = tf.Qwen2_5_VLConfig(vision_config=vision, **text)
        model = tf.Qwen2_5_VLForConditionalGeneration(cfg)
        ip = tf.Qwen2VLImageProcessor(min_pixels=56 * 56, max_pixels=224 * 224)
        proc = tf.Qwen2_5_VLProcessor(image_processor=ip, tokenizer=tok, chat_template=CHAT_TEMPLATE, **video_kwargs(tf))
    else:
        raise ValueError("arch %r: want one of %s" % (arch, ", ".join(ARCHS)))
    model.generation_config.eos_token_id = [ids["<|im_end|>"]]
    model.generation_config.pad_token_id = ids["<|endoftext|>"]
    os.makedirs(out, exist_ok=True)
    model.to(torch.float32).save_pretrained(out)
    if proc is not None:
        proc.save_pretrained(out)
    tok.save_pretrained(out)
    return sum(p.numel() for p in model.parameters())


def build_each(root, archs):
    """Builds one model of each of archs in a folder of its own under root (seed 0,
    the default size) and returns {arch: folder}."""
    out = {}
    for arch in archs:
        out[arch] = os.path.join(str(root), arch)
        build(out[arch], arch)
    return out


def main():
    ap = argparse.ArgumentParser(prog="python3 -m tests.random_models")
    ap.add_argument("out")
    ap.add_argument("--arch", default="qwen2_5_vl", choices=ARCHS)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--hidden", type=int, default=128, help="hidden size, a multiple of 64 (default 128)")
    ap.add_argument("--layers", type=int, default=2, help="decoder layers (default 2)")
    a = ap.parse_args()
    n = build(a.out, a.arch, a.seed, a.hidden, a.layers)
    print("random_models: %s with %d parameters in %s" % (a.arch, n, a.out))


if __name__ == "__main__":
    main()
