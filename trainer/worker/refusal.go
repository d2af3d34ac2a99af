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

package worker

import (
	"context"
	"fmt"
	"path"
	"regexp"
	"sort"
	"strings"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
)

// RefusalDomain is the google.rpc.ErrorInfo domain of a worker's permanent refusal.
//
// The contract (the PyTorch worker's twin is espo_worker/refusal.py): a worker that
// refuses its Configure options for good (a model that is no folder, LoRA targets
// the model lacks, an attention kernel whose package is not installed: what a
// restart would meet again) answers with a status whose details hold one ErrorInfo
// of this domain, a reason below and the metadata the reason defines (strings; a
// list comma-separated). The worker sends facts; this side owns the spec: refusals
// maps each reason to the ESPOJob field at fault, the run's outcome and the message
// that names the field, what the worker found and the fix. The status's code and
// message are what a trainer that does not read the detail understands (the model
// refusals FailedPrecondition with ModelIncompletePrefix, the others
// InvalidArgument); a reason this side does not know is read by that code alone.
const RefusalDomain = "espo.worker.v1"

// The reasons of a worker's permanent refusal (ErrorInfo.Reason) and their metadata.
const (
	// ReasonModelNotAFolder: the model option names no folder in the worker's pod,
	// nor a model in its Hugging Face cache; the worker never downloads one. model:
	// the option as sent; folder: the absolute path looked at; cache: the Hugging
	// Face cache looked in (only for a relative name).
	ReasonModelNotAFolder = "MODEL_NOT_A_FOLDER"
	// ReasonModelUnsupported: the model folder holds a model the worker cannot
	// train. folder; found: what it holds; supported: what the worker trains.
	ReasonModelUnsupported = "MODEL_UNSUPPORTED"
	// ReasonLoRATargetModulesNotFound: no module LoRA can adapt matches the LoRA
	// targets. missing: the targets nothing matches; available: the last names of
	// the modules LoRA could adapt (linear layers), deduplicated and sorted, at most
	// 40; omitted: how many more there are (absent when none).
	ReasonLoRATargetModulesNotFound = "LORA_TARGET_MODULES_NOT_FOUND"
	// ReasonAttnImplementationUnavailable: the attention implementation cannot run.
	// implementation: the option; package: the Python package it needs that is not
	// installed, or model: the model class that does not support it; available: the
	// implementations that would run instead.
	ReasonAttnImplementationUnavailable = "ATTN_IMPLEMENTATION_UNAVAILABLE"
)

// refusal is what a reason means to the trainer: the spec field at fault, the
// outcome that ends the run, the status code a worker sends it with, and what was
// found with the fix, written from the metadata.
type refusal struct {
	field   string
	outcome trainingv1alpha1.TrainingOutcome
	code    codes.Code
	explain func(md map[string]string) string
}

// refusals is the one place that maps a reason to its spec field, outcome and
// message.
var refusals = map[string]refusal{
	ReasonModelNotAFolder:               {"spec.model.pretrained", trainingv1alpha1.OutcomeModelIncomplete, codes.FailedPrecondition, explainNotAFolder},
	ReasonModelUnsupported:              {"spec.model.pretrained", trainingv1alpha1.OutcomeModelIncomplete, codes.FailedPrecondition, explainUnsupported},
	ReasonLoRATargetModulesNotFound:     {"spec.model.lora.targetModules", trainingv1alpha1.OutcomeConfigInvalid, codes.InvalidArgument, explainLoRATargets},
	ReasonAttnImplementationUnavailable: {"spec.model.attnImplementation", trainingv1alpha1.OutcomeConfigInvalid, codes.InvalidArgument, explainAttn},
}

// RefusalError is a worker's permanent refusal of its Configure options (see
// RefusalDomain): a restart would meet it again, so the trainer ends the run with
// Outcome. Remote returns one for a status that carries a refusal of a known
// reason; a Policy may return one, which the server sends with its reason.
type RefusalError struct {
	Reason   string
	Metadata map[string]string
}

// Error names the spec field at fault, what the worker found and the fix.
func (e *RefusalError) Error() string {
	r, ok := refusals[e.Reason]
	if !ok {
		return fmt.Sprintf("worker refused its options: %s %v", e.Reason, e.Metadata)
	}
	return r.field + ": " + r.explain(e.Metadata)
}

// Field is the ESPOJob field at fault ("" for an unknown reason).
func (e *RefusalError) Field() string { return refusals[e.Reason].field }

// Outcome is the outcome that ends the run ("" for an unknown reason).
func (e *RefusalError) Outcome() trainingv1alpha1.TrainingOutcome { return refusals[e.Reason].outcome }

// GRPCStatus is e as the protocol sends it: the reason's code, the message Error()
// (after ModelIncompletePrefix for a FailedPrecondition one, as a trainer that does
// not read the detail reads a ModelIncompleteError), and the ErrorInfo of
// RefusalDomain, e's reason and metadata.
func (e *RefusalError) GRPCStatus() *status.Status {
	code, msg := codes.InvalidArgument, e.Error()
	if r, ok := refusals[e.Reason]; ok {
		code = r.code
	}
	if code == codes.FailedPrecondition {
		msg = ModelIncompletePrefix + msg
	}
	s := status.New(code, msg)
	if d, err := s.WithDetails(&errdetails.ErrorInfo{Reason: e.Reason, Domain: RefusalDomain, Metadata: e.Metadata}); err == nil {
		return d
	}
	return s
}

// refusalOf returns the refusal err carries in its status's details (ErrorInfo of
// RefusalDomain and a known reason), or nil.
func refusalOf(err error) *RefusalError {
	s, ok := status.FromError(err)
	if err == nil || !ok {
		return nil
	}
	for _, d := range s.Details() {
		info, ok := d.(*errdetails.ErrorInfo)
		if !ok || info.GetDomain() != RefusalDomain {
			continue
		}
		if _, known := refusals[info.GetReason()]; known {
			return &RefusalError{Reason: info.GetReason(), Metadata: info.GetMetadata()}
		}
	}
	return nil
}

// readRefusal is the client interceptor that returns a call's error as a
// *RefusalError when its status carries a worker's refusal.
func readRefusal(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn,
	invoke grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	err := invoke(ctx, method, req, reply, cc, opts...)
	if r := refusalOf(err); r != nil {
		return r
	}
	return err
}

// hubID matches a Hugging Face model id, "owner/name".
var hubID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$`)

// onClaim returns the path of model under spec.model.weights' mount
// (ModelsMountPath), in the pod or under a local mode's pod root, and whether it
// lies there.
func onClaim(model string) (string, bool) {
	mount := trainingv1alpha1.ModelsMountPath + "/"
	if i := strings.Index(model, mount); i == 0 || (i > 0 && path.IsAbs(model)) {
		return model[i+len(mount):], true
	}
	return "", false
}

func explainNotAFolder(md map[string]string) string {
	model, folder, cache := md["model"], md["folder"], md["cache"]
	name, claim := onClaim(model)
	if !claim {
		name = model
	}
	hub := hubID.MatchString(name) && !strings.Contains(name, "..")
	var b strings.Builder
	switch {
	case claim:
		fmt.Fprintf(&b, "no folder %s in the worker's pod (spec.model.weights' claim is mounted at %s)", folder, trainingv1alpha1.ModelsMountPath)
	case cache != "":
		fmt.Fprintf(&b, "%q is no folder in the worker's pod (it looked for %s) nor a model in its Hugging Face cache (%s)", model, folder, cache)
	default:
		fmt.Fprintf(&b, "no folder %s in the worker's pod", folder)
	}
	if hub {
		fmt.Fprintf(&b, ": %q looks like a Hugging Face hub id, and the worker does not fetch models from the hub", name)
	}
	switch {
	case claim && hub:
		base := path.Base(name)
		fmt.Fprintf(&b, ": put the model's files on the claim (huggingface-cli download %s --local-dir <claim>/%s) and set pretrained to their folder on it (%s)", name, base, base)
	case claim:
		b.WriteString(": put the model's files in that folder of the claim, or set pretrained to the folder of the claim that holds them")
	default:
		b.WriteString(": put the model's files on a claim, set spec.model.weights to the claim and pretrained to their folder on it")
	}
	return b.String()
}

func explainUnsupported(md map[string]string) string {
	return fmt.Sprintf("the model folder %s holds %s, which the worker cannot train: it trains %s; set pretrained to the folder of such a model",
		md["folder"], md["found"], md["supported"])
}

// list is a comma-separated metadata value as a list, in its order.
func list(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

func explainLoRATargets(md map[string]string) string {
	available := list(md["available"])
	sort.Strings(available)
	have := "none"
	if len(available) > 0 {
		have = strings.Join(available, ", ")
	}
	if n := md["omitted"]; n != "" && n != "0" {
		have += " and " + n + " more"
	}
	return fmt.Sprintf("the model has no module named %s that LoRA can adapt (a linear layer); the names of those it has are %s: "+
		"list some of these, or leave targetModules unset to adapt every linear layer", strings.Join(list(md["missing"]), ", "), have)
}

func explainAttn(md map[string]string) string {
	impl, available := md["implementation"], list(md["available"])
	instead := "leave it unset (transformers' choice for the model)"
	if len(available) > 0 {
		instead = "set it to " + strings.Join(available, " or ") + ", or leave it unset (transformers' choice for the model)"
	}
	if pkg := md["package"]; pkg != "" {
		return fmt.Sprintf("%s needs the Python package %s, which the worker's image does not have: %s, or run a worker image that has %s (spec.model.image)",
			impl, pkg, instead, pkg)
	}
	return fmt.Sprintf("the model (%s) does not support %s: %s", md["model"], impl, instead)
}
