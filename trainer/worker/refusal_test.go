/*
Copyright 2026 The espo-operator Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package worker_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
	"github.com/espo-dev/espo-operator/trainer/worker"
	"github.com/espo-dev/espo-operator/trainer/worker/cpu"
)

// refusingPolicy refuses every Configure with err.
type refusingPolicy struct {
	worker.Policy
	err error
}

func (p refusingPolicy) Configure(uint64, map[string]string) error { return p.err }

// TestARefusalCrossesTheProtocol: a policy's permanent refusal reaches the trainer as
// a *RefusalError with its reason and metadata, from a remote worker (the ErrorInfo
// in the status's details) as from an in-process one, through the gang, which names
// the worker; its message names the spec field.
func TestARefusalCrossesTheProtocol(t *testing.T) {
	want := &worker.RefusalError{Reason: worker.ReasonLoRATargetModulesNotFound,
		Metadata: map[string]string{"missing": "wq", "available": "k_proj,q_proj"}}
	p := refusingPolicy{Policy: cpu.New(1), err: want}
	addr := listenPolicy(t, p, worker.ServerOptions{NoAuth: true})
	for name, m := range map[string]worker.Member{"remote": dial(t, addr, nil), "local": worker.NewLocal(p)} {
		_, err := worker.NewGang(m).Configure(context.Background(), worker.Setup{})
		var got *worker.RefusalError
		if !errors.As(err, &got) {
			t.Errorf("%s: Configure: %v, want a *RefusalError", name, err)
			continue
		}
		if got.Reason != want.Reason || !cmp.Equal(got.Metadata, want.Metadata) {
			t.Errorf("%s: refusal %s %v, want %s %v", name, got.Reason, got.Metadata, want.Reason, want.Metadata)
		}
		if !strings.HasPrefix(err.Error(), "worker 0 (") || !strings.HasSuffix(err.Error(), "): "+want.Error()) {
			t.Errorf("%s: message %q, want the worker named and then %q", name, err, want.Error())
		}
		if got.Outcome() != trainingv1alpha1.OutcomeConfigInvalid || got.Field() != "spec.model.lora.targetModules" {
			t.Errorf("%s: outcome %q, field %q", name, got.Outcome(), got.Field())
		}
	}
}

// TestARefusalOfAnUnknownReasonIsReadByItsCode: a worker newer than the trainer may
// send a reason the trainer does not know; the status's code decides then, as for a
// worker that sends no reason (InvalidArgument: ErrInvalid, the worker's words kept).
func TestARefusalOfAnUnknownReasonIsReadByItsCode(t *testing.T) {
	s, err := status.New(codes.InvalidArgument, "option x: no such thing").WithDetails(
		&errdetails.ErrorInfo{Reason: "SOMETHING_NEW", Domain: worker.RefusalDomain})
	if err != nil {
		t.Fatal(err)
	}
	addr := listenPolicy(t, refusingPolicy{Policy: cpu.New(1), err: s.Err()}, worker.ServerOptions{NoAuth: true})
	_, err = dial(t, addr, nil).Configure(context.Background(), worker.Setup{})
	if r := (*worker.RefusalError)(nil); errors.As(err, &r) {
		t.Errorf("Configure: %v, a *RefusalError of a reason this side does not know", err)
	}
	if !errors.Is(err, worker.ErrInvalid) || !strings.Contains(err.Error(), "option x: no such thing") {
		t.Errorf("Configure: %v, want ErrInvalid with the worker's message", err)
	}
}

// TestARefusalsStatusIsWhatAnOlderTrainerReads: the status of a model refusal is a
// FailedPrecondition with ModelIncompletePrefix (a *ModelIncompleteError to a
// trainer that does not read the reason), of the others InvalidArgument.
func TestARefusalsStatusIsWhatAnOlderTrainerReads(t *testing.T) {
	model := (&worker.RefusalError{Reason: worker.ReasonModelNotAFolder, Metadata: map[string]string{"model": "/m", "folder": "/m"}}).GRPCStatus()
	if model.Code() != codes.FailedPrecondition || !strings.HasPrefix(model.Message(), worker.ModelIncompletePrefix+"spec.model.pretrained: ") {
		t.Errorf("model refusal: %v", model.Err())
	}
	attn := (&worker.RefusalError{Reason: worker.ReasonAttnImplementationUnavailable, Metadata: map[string]string{"implementation": "flash_attention_2"}}).GRPCStatus()
	if attn.Code() != codes.InvalidArgument {
		t.Errorf("attention refusal: %v", attn.Err())
	}
}

// TestRefusalMessages: the trainer's message for each reason names the spec field,
// what the worker found (paths as the pod sees them) and the fix.
func TestRefusalMessages(t *testing.T) {
	for name, c := range map[string]struct {
		reason string
		md     map[string]string
		want   string
	}{
		"a hub id on the claim": {worker.ReasonModelNotAFolder,
			map[string]string{"model": "/models/Qwen/Qwen2.5-0.5B-Instruct", "folder": "/models/Qwen/Qwen2.5-0.5B-Instruct"},
			`spec.model.pretrained: no folder /models/Qwen/Qwen2.5-0.5B-Instruct in the worker's pod (spec.model.weights' claim is mounted at /models): ` +
				`"Qwen/Qwen2.5-0.5B-Instruct" looks like a Hugging Face hub id, and the worker does not fetch models from the hub: ` +
				`put the model's files on the claim (huggingface-cli download Qwen/Qwen2.5-0.5B-Instruct --local-dir <claim>/Qwen2.5-0.5B-Instruct) ` +
				`and set pretrained to their folder on it (Qwen2.5-0.5B-Instruct)`},
		"a hub id on the claim, under a local pod root": {worker.ReasonModelNotAFolder,
			map[string]string{"model": "/tmp/pod/root/models/Qwen/Qwen2.5-0.5B-Instruct", "folder": "/tmp/pod/root/models/Qwen/Qwen2.5-0.5B-Instruct"},
			`spec.model.pretrained: no folder /tmp/pod/root/models/Qwen/Qwen2.5-0.5B-Instruct in the worker's pod (spec.model.weights' claim is mounted at /models): ` +
				`"Qwen/Qwen2.5-0.5B-Instruct" looks like a Hugging Face hub id, and the worker does not fetch models from the hub: ` +
				`put the model's files on the claim (huggingface-cli download Qwen/Qwen2.5-0.5B-Instruct --local-dir <claim>/Qwen2.5-0.5B-Instruct) ` +
				`and set pretrained to their folder on it (Qwen2.5-0.5B-Instruct)`},
		"a folder the claim lacks": {worker.ReasonModelNotAFolder,
			map[string]string{"model": "/models/qwen-3b", "folder": "/models/qwen-3b"},
			`spec.model.pretrained: no folder /models/qwen-3b in the worker's pod (spec.model.weights' claim is mounted at /models): ` +
				`put the model's files in that folder of the claim, or set pretrained to the folder of the claim that holds them`},
		"a hub id without a claim": {worker.ReasonModelNotAFolder,
			map[string]string{"model": "Qwen/Qwen2.5-0.5B-Instruct", "folder": "/app/Qwen/Qwen2.5-0.5B-Instruct", "cache": "/home/espo/.cache/huggingface/hub"},
			`spec.model.pretrained: "Qwen/Qwen2.5-0.5B-Instruct" is no folder in the worker's pod (it looked for /app/Qwen/Qwen2.5-0.5B-Instruct) ` +
				`nor a model in its Hugging Face cache (/home/espo/.cache/huggingface/hub): "Qwen/Qwen2.5-0.5B-Instruct" looks like a Hugging Face hub id, ` +
				`and the worker does not fetch models from the hub: put the model's files on a claim, set spec.model.weights to the claim and pretrained to their folder on it`},
		"an absolute path in the image": {worker.ReasonModelNotAFolder,
			map[string]string{"model": "/opt/model", "folder": "/opt/model"},
			`spec.model.pretrained: no folder /opt/model in the worker's pod: put the model's files on a claim, set spec.model.weights to the claim and pretrained to their folder on it`},
		"a model type transformers does not know": {worker.ReasonModelUnsupported,
			map[string]string{"folder": "/models/m", "found": "FooForCausalLM (model_type foo, which transformers 5.23.0 does not know)", "supported": "a causal language model"},
			`spec.model.pretrained: the model folder /models/m holds FooForCausalLM (model_type foo, which transformers 5.23.0 does not know), ` +
				`which the worker cannot train: it trains a causal language model; set pretrained to the folder of such a model`},
		"LoRA targets the model lacks": {worker.ReasonLoRATargetModulesNotFound,
			map[string]string{"missing": "c_attn,wq", "available": "q_proj,k_proj,down_proj", "omitted": "3"},
			`spec.model.lora.targetModules: the model has no module named c_attn, wq that LoRA can adapt (a linear layer); ` +
				`the names of those it has are down_proj, k_proj, q_proj and 3 more: list some of these, or leave targetModules unset to adapt every linear layer`},
		"flash attention without its package": {worker.ReasonAttnImplementationUnavailable,
			map[string]string{"implementation": "flash_attention_2", "package": "flash_attn", "available": "sdpa,eager"},
			`spec.model.attnImplementation: flash_attention_2 needs the Python package flash_attn, which the worker's image does not have: ` +
				`set it to sdpa or eager, or leave it unset (transformers' choice for the model), or run a worker image that has flash_attn (spec.model.image)`},
		"an implementation the model does not support": {worker.ReasonAttnImplementationUnavailable,
			map[string]string{"implementation": "sdpa", "model": "OldForCausalLM", "available": "eager"},
			`spec.model.attnImplementation: the model (OldForCausalLM) does not support sdpa: set it to eager, or leave it unset (transformers' choice for the model)`},
	} {
		if got := (&worker.RefusalError{Reason: c.reason, Metadata: c.md}).Error(); got != c.want {
			t.Errorf("%s:\n got %s\nwant %s", name, got, c.want)
		}
	}
}
