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

package trainer

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/utils/clock"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
	"github.com/espo-dev/espo-operator/trainer/plan"
	"github.com/espo-dev/espo-operator/trainer/tracking"
	"github.com/espo-dev/espo-operator/trainer/tracking/mlflow"
	"github.com/espo-dev/espo-operator/trainer/tracking/tensorboard"
)

// defaultTrackerCloseTimeout bounds how long the end of a run waits for the
// trackers to take what is still queued (Options.TrackerCloseTimeout).
const defaultTrackerCloseTimeout = time.Minute

// NewTracker returns the tracker of cfg's spec.tracking, nil when it has none. env
// reads the trainer container's environment (the MLflow credentials the controller
// takes from spec.tracking.mlflow.credentialsSecret). A tracker that cannot be made
// (credentials missing) does not stop the run: it records nothing, and the status
// says why, naming the field.
func NewTracker(cfg *Config, env func(string) string, clk clock.WithTicker, log logr.Logger) *tracking.Tracker {
	tr := cfg.Spec.Tracking
	if tr == nil {
		return nil
	}
	var sinks []tracking.Sink
	if m := tr.MLflow; m != nil {
		sinks = append(sinks, mlflowSink(m, cfg.Job.Namespace, env))
	}
	if tb := tr.TensorBoard; tb != nil {
		sinks = append(sinks, tensorBoardSink(tb, cfg.CheckpointDir))
	}
	run := tracking.Run{JobUID: string(cfg.Job.UID), Namespace: cfg.Job.Namespace, JobName: cfg.Job.Name}
	if tr.MLflow != nil {
		run.Name = RunName(tr.MLflow.RunName, cfg)
	}
	return tracking.New(sinks, run, tracking.Options{Clock: clk, Log: log})
}

// RunName renders spec.tracking.mlflow.runName's template for cfg's job: {namespace},
// {name}, {uid} and {algorithm}; an empty template is the job's name.
func RunName(template string, cfg *Config) string {
	if template == "" {
		template = "{name}"
	}
	return strings.NewReplacer("{namespace}", cfg.Job.Namespace, "{name}", cfg.Job.Name, "{uid}", string(cfg.Job.UID),
		"{algorithm}", string(cfg.Spec.Algorithm.Name)).Replace(template)
}

// mlflowSink is the MLflow sink of m, with the credentials env holds; a sink that
// refuses every call, naming the field, when they are missing or m is invalid.
func mlflowSink(m *trainingv1alpha1.MLflowTracking, namespace string, env func(string) string) tracking.Sink {
	c := mlflow.Config{TrackingURI: m.TrackingURI, Experiment: m.Experiment,
		Token:    env(trainingv1alpha1.MLflowTokenEnv),
		Username: env(trainingv1alpha1.MLflowUsernameEnv), Password: env(trainingv1alpha1.MLflowPasswordEnv)}
	if c.Experiment == "" {
		c.Experiment = namespace
	}
	if s := m.CredentialsSecret; s != nil && c.Token == "" && (c.Username == "" || c.Password == "") {
		return refusingSink{name: mlflow.FieldSink, err: tracking.Permanent(mlflow.FieldCredentials, fmt.Errorf(
			"the Secret %s is missing, or holds neither the key token nor the keys username and password: create it with those keys (kubectl create secret generic %s --from-literal=token=...)",
			s.Name, s.Name))}
	}
	client, err := mlflow.New(c)
	if err != nil {
		return refusingSink{name: mlflow.FieldSink, err: err}
	}
	return client
}

// tensorBoardSink writes the event files into tb.Path inside the checkpoint folder.
func tensorBoardSink(tb *trainingv1alpha1.TensorBoardTracking, checkpointDir string) tracking.Sink {
	if checkpointDir == "" {
		return refusingSink{name: "spec.tracking.tensorboard", err: tracking.Permanent("spec.tracking.tensorboard",
			errors.New("the event files go into spec.checkpoint's folder, and the run config has none: set spec.checkpoint"))}
	}
	return tensorboard.New(filepath.Join(checkpointDir, tb.Path))
}

// refusingSink is a tracker that cannot be made: every call fails with err, a
// PermanentError naming the field to fix.
type refusingSink struct {
	name string
	err  error
}

func (s refusingSink) Name() string { return s.name }
func (s refusingSink) Open(context.Context, tracking.Run) (tracking.Opened, error) {
	return tracking.Opened{}, s.err
}
func (s refusingSink) LogParams(context.Context, map[string]string) error { return s.err }
func (s refusingSink) Log(context.Context, []tracking.Point) error        { return s.err }
func (s refusingSink) Close(context.Context, string) error                { return nil }

// versionTags are the run's tags of what ran it: the trainer's and the operator's
// versions and images, which an upgrade changes (so they are tags, not params).
func versionTags(p *trainingv1alpha1.RunProvenance) map[string]string {
	if p == nil {
		return nil
	}
	return map[string]string{"espo.dev/trainer-version": p.TrainerVersion, "espo.dev/operator-version": p.OperatorVersion,
		"espo.dev/trainer-image": p.TrainerImage, "espo.dev/worker-image": p.WorkerImage}
}

// runParams flattens the job's datasets, model, algorithm and rewards (which no
// update changes, so that a resumed run's parameters are the same) into dotted
// keys, such as algorithm.groupSize, with the provenance's digests and seed.
func runParams(spec *trainingv1alpha1.ESPOJobSpec, p *trainingv1alpha1.RunProvenance) map[string]string {
	out := map[string]string{}
	for name, section := range map[string]any{"datasets": spec.Datasets, "model": spec.Model,
		"algorithm": spec.Algorithm, "rewards": spec.Rewards} {
		b, err := json.Marshal(section)
		if err != nil {
			continue // the API types always marshal
		}
		var v any
		if json.Unmarshal(b, &v) == nil {
			flatten(out, name, v)
		}
	}
	if p != nil {
		for k, v := range map[string]string{"datasets": p.Datasets, "model": p.Model, "algorithm": p.Algorithm,
			"rewards": p.Rewards, "modelConfig": p.ModelConfig, "encoder": p.Encoder} {
			if v != "" {
				out["provenance."+k] = v
			}
		}
		out["provenance.seed"] = strconv.FormatInt(p.Seed, 10)
	}
	return out
}

// flatten writes v into out under key: an object's fields as key.field, a list's
// items as key.0, key.1, ..., a value as its JSON text (a string as itself).
func flatten(out map[string]string, key string, v any) {
	switch x := v.(type) {
	case map[string]any:
		for k, vv := range x {
			flatten(out, key+"."+k, vv)
		}
	case []any:
		for i, vv := range x {
			flatten(out, key+"."+strconv.Itoa(i), vv)
		}
	case string:
		out[key] = x
	case nil:
	default:
		b, _ := json.Marshal(x)
		out[key] = string(b)
	}
}

// stepPoints are a training step's metrics at step (took is its wall time, before
// any checkpoint; lr its learning rate), measured at now: the loss, rewards (mean
// and per stage), COUT, advantages, KL, clipped fraction, gradient norm, learning
// rate, tokens and their rate, and the phase times.
func stepPoints(k plan.Kind, step int64, s batchStats, lr float64, took time.Duration, now time.Time) []tracking.Point {
	var ps []tracking.Point
	add := func(key string, v float64) {
		ps = append(ps, tracking.Point{Key: key, Value: v, Step: step, Time: now})
	}
	add("train/loss", -s.objective)
	add("train/grad_norm", s.gradNorm)
	add("train/learning_rate", lr)
	add("train/tokens", float64(s.tokens))
	if took > 0 {
		add("train/tokens_per_second", float64(s.tokens)/took.Seconds())
	}
	if k != plan.SFT {
		add("train/reward", s.meanReward())
		for stage, m := range s.stageReward {
			add("train/reward/"+stage.String(), m.mean())
		}
		add("train/cout", s.cout)
		add("train/advantage/mean", s.advantage.mean())
		add("train/advantage/std", s.advantageStd())
		add("train/kl", s.kl)
		add("train/clip_fraction", s.clipFraction)
		if smp := s.sampler; smp != nil {
			add("train/sampler_mismatch", smp.mismatch)
			add("train/sampler_truncated", smp.truncated)
		}
	}
	add("time/step", took.Seconds())
	for p, d := range s.times {
		add("time/"+string(p), d.Seconds())
	}
	return ps
}

// evalPoints are an evaluation's metrics (by their API names), as
// eval/<split>/<metric> at the step of the policy evaluated, measured at now.
func evalPoints(split string, step int64, named map[string]float64, now time.Time) []tracking.Point {
	ps := make([]tracking.Point, 0, len(named))
	for name, v := range named {
		ps = append(ps, tracking.Point{Key: "eval/" + split + "/" + name, Value: v, Step: step, Time: now})
	}
	return ps
}

// exportTags say where the exported model lives, as a storage URI that serving
// tools take (KServe's storageUri): pvc://<claim>/<path>; with its kind (lora or
// full), whether a merged model is beside the adapter, and its step.
func exportTags(ex *trainingv1alpha1.ExportSpec, st *trainingv1alpha1.ExportStatus) map[string]string {
	uri := "pvc://" + path.Join(ex.PersistentVolumeClaim.ClaimName, ex.PersistentVolumeClaim.Path)
	return map[string]string{"espo.dev/export": uri, "espo.dev/export-kind": string(st.Kind),
		"espo.dev/export-merged": strconv.FormatBool(st.Merged), "espo.dev/export-step": strconv.FormatInt(st.Step, 10)}
}

// endTracking sends what tr still queues (for at most timeout) and ends its runs
// with outcome: "Succeeded", "Failed", or "" to leave them open for a resume.
func endTracking(tr *tracking.Tracker, outcome string, timeout time.Duration, log logr.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), cmp.Or(timeout, defaultTrackerCloseTimeout))
	defer cancel()
	if err := tr.Close(ctx, outcome); err != nil {
		log.Info("experiment tracking did not end cleanly", "error", err.Error())
	}
}
