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

package testenv

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/espo-dev/espo-operator/config/policy"
	"github.com/espo-dev/espo-operator/test/builders"
)

// policyTimeout bounds the wait for the API server to enforce a new admission policy:
// it reads policies and bindings from its informers and compiles them there, so a
// request right after the create may pass unchecked, longer on a loaded machine.
const policyTimeout = 30 * time.Second

// probeNamespace holds the suspended ESPOJob that InstallTrainerStatusPolicy's probe
// writes to, for as long as the probe runs.
const probeNamespace = "espo-policy-probe"

// InstallTrainerStatusPolicy installs the shipped trainer status admission policy and
// its binding (policy.Install) with c, an administrator's client for cfg, and waits
// until the API server enforces it: until a dry-run status patch of a probe job by
// the trainer identity of its namespace, with a token bound to no pod, is refused with
// the policy's message. The identity is impersonated in group system:masters, so RBAC
// lets the request through to admission.
func InstallTrainerStatusPolicy(cfg *rest.Config, c client.Client) error {
	ctx, cancel := context.WithTimeout(context.Background(), policyTimeout)
	defer cancel()
	if err := policy.Install(ctx, c); err != nil {
		return err
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: probeNamespace}}
	if err := c.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	job := builders.MakeESPOJob("probe", probeNamespace).Suspend(true).Obj()
	if err := c.Create(ctx, job); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	defer func() { _ = c.Delete(context.Background(), job) }()
	trainerCfg := rest.CopyConfig(cfg)
	trainerCfg.Impersonate = rest.ImpersonationConfig{
		UserName: "system:serviceaccount:" + probeNamespace + ":espo-trainer", Groups: []string{"system:masters"}}
	trainer, err := client.New(trainerCfg, client.Options{Scheme: c.Scheme()})
	if err != nil {
		return err
	}
	var last error
	err = wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		last = trainer.Status().Patch(ctx, job.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(`{"status":{}}`)),
			client.DryRunAll)
		return apierrors.IsForbidden(last) && strings.Contains(last.Error(), "espo-trainer may patch only"), nil
	})
	if err != nil {
		return fmt.Errorf("the trainer status policy was not enforced within %s of its install (the probe's status patch: %v): %w",
			policyTimeout, last, err)
	}
	return nil
}
