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
	"errors"
	"fmt"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// ModelIncompletePrefix begins the message of a worker's refusal of an incomplete
// model folder (ModelIncompleteError). It is the protocol's one marker of that
// refusal: a FailedPrecondition status whose message begins with it. The PyTorch
// worker writes the same prefix (espo_worker.modelfiles.PREFIX); the torch tests
// check that Remote reads its refusal as a *ModelIncompleteError.
const ModelIncompletePrefix = "model incomplete: "

// ModelIncompleteError is a worker's refusal to configure a model whose folder lacks
// files the model needs (config.json, the weights, the tokenizer, ...): a restart
// reads the same folder, so the trainer ends the run with the ModelIncomplete
// outcome. A Policy's Configure returns one; the server sends it as a
// FailedPrecondition status whose message is Error(), and Remote's Configure turns
// that status back into a *ModelIncompleteError.
type ModelIncompleteError struct {
	// Detail names the folder, as the worker's pod sees it, and every missing file.
	Detail string
}

// Error is ModelIncompletePrefix followed by Detail.
func (e *ModelIncompleteError) Error() string { return ModelIncompletePrefix + e.Detail }

// status is e as the protocol sends it.
func (e *ModelIncompleteError) status() error {
	return status.Error(codes.FailedPrecondition, e.Error())
}

// configureErrorOf returns err, the error of a worker's Configure, unchanged when it
// is a *RefusalError (a refusal with its reason, which readRefusal made), as a
// *ModelIncompleteError when it is the protocol's refusal of an incomplete model, as
// an error wrapping ErrInvalid (the worker's message kept) when the worker refused
// the setup as invalid (InvalidArgument: an unknown option, a bad value), and
// unchanged otherwise.
func configureErrorOf(err error) error {
	if r := (*RefusalError)(nil); errors.As(err, &r) {
		return err
	}
	s, ok := status.FromError(err)
	if ok && s.Code() == codes.InvalidArgument {
		return fmt.Errorf("%w: %s", ErrInvalid, s.Message())
	}
	if !ok || s.Code() != codes.FailedPrecondition || !strings.HasPrefix(s.Message(), ModelIncompletePrefix) {
		return err
	}
	return &ModelIncompleteError{Detail: strings.TrimPrefix(s.Message(), ModelIncompletePrefix)}
}
