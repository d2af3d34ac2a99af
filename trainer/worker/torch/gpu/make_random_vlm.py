# Copyright 2026 The espo-operator Authors. Licensed under the Apache License, Version 2.0.
"""Writes a Qwen2-VL model with a small random config, and its processor, to a folder:
a real VLM architecture with nothing to download (hack/gpu-check.sh trains it).

    python3 make_random_vlm.py OUT [--arch qwen2_vl|qwen2_5_vl]

The tokenizer is a byte-level BPE trained here on GUI-R1-style text, with Qwen's
special tokens and a Qwen-style chat template; the image processor is Qwen2-VL's with
a small pixel budget. Needs transformers (>= 4.45 for qwen2_vl, >= 4.49 for
qwen2_5_vl) and tokenizers.
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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--arch", default="qwen2_vl", choices=["qwen2_vl", "qwen2_5_vl"])
    a = ap.parse_args()
    import torch
    import transformers as tf
    tok = tokenizer(a.out)
    ids = {t: tok.convert_tokens_to_ids(t) for t in SPECIAL}
    text = dict(vocab_size=len(tok), hidden_size=128, intermediate_size=256, num_hidden_layers=2,
                num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=4096,
                rope_scaling={"type": "mrope", "mrope_section": [4, 6, 6]},  # 2 * 16 = head dim 32
                bos_token_id=ids["<|endoftext|>"], eos_token_id=ids["<|im_end|>"], pad_token_id=ids["<|endoftext|>"],
                vision_start_token_id=ids["<|vision_start|>"], vision_end_token_id=ids["<|vision_end|>"],
                image_token_id=ids["<|image_pad|>"], video_token_id=ids["<|video_pad|>"], tie_word_embeddings=True)
    if a.arch == "qwen2_vl":
        vision = dict(depth=2, embed_dim=64, hidden_size=128, num_heads=4, mlp_ratio=2, patch_size=14,
                      spatial_merge_size=2, temporal_patch_size=2, in_channels=3)
        cfg = tf.Qwen2VLConfig(vision_config=vision, **text)
        model = tf.Qwen2VLForConditionalGeneration(cfg)
        ip = tf.Qwen2VLImageProcessor(min_pixels=56 * 56, max_pixels=224 * 224)
        proc = tf.Qwen2VLProcessor(image_processor=ip, tokenizer=tok, chat_template=CHAT_TEMPLATE, **video_kwargs(tf))
    else:
        vision = dict(depth=2, hidden_size=64, out_hidden_size=128, num_heads=4, intermediate_size=128,
                      patch_size=14, spatial_merge_size=2, temporal_patch_size=2, window_size=56,
                      fullatt_block_indexes=[1], in_channels=3)
        cfg = tf.Qwen2_5_VLConfig(vision_config=vision, **text)
        model = tf.Qwen2_5_VLForConditionalGeneration(cfg)
        ip = tf.Qwen2VLImageProcessor(min_pixels=56 * 56, max_pixels=224 * 224)
        proc = tf.Qwen2_5_VLProcessor(image_processor=ip, tokenizer=tok, chat_template=CHAT_TEMPLATE, **video_kwargs(tf))
    model.generation_config.eos_token_id = [ids["<|im_end|>"]]
    model.generation_config.pad_token_id = ids["<|endoftext|>"]
    os.makedirs(a.out, exist_ok=True)
    model.to(torch.float32).save_pretrained(a.out)
    proc.save_pretrained(a.out)
    tok.save_pretrained(a.out)
    n = sum(p.numel() for p in model.parameters())
    print("make_random_vlm: %s with %d parameters, vocabulary %d, in %s" % (a.arch, n, len(tok), a.out))


if __name__ == "__main__":
    main()
