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

package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
	"github.com/espo-dev/espo-operator/espo"
	"github.com/espo-dev/espo-operator/trainer/dataset"
	"github.com/espo-dev/espo-operator/trainer/embedding"
	"github.com/espo-dev/espo-operator/trainer/metrics"
	"github.com/espo-dev/espo-operator/trainer/worker"
	"github.com/espo-dev/espo-operator/trainer/workerpb"
)

// encoderStartTimeout bounds the encoder worker's start: Python, torch and the model.
const encoderStartTimeout = 3 * time.Minute

// encoderJudge judges the intents of an arm's test answers a second way, beside the
// run's own slot judge: by the cosine of sentence embeddings of the predicted and the
// true intent, from a PyTorch worker process (the tiny policy, which it never uses,
// and the sentence encoder of -encoder, asked through the worker protocol's Embed
// call, as a job with spec.rewards.intent.embedder.worker is), at that judge's default
// threshold (trainingv1alpha1.DefaultEncoderIntentThreshold).
type encoderJudge struct {
	cmd    *exec.Cmd
	remote *worker.Remote
	cache  *embedding.Cache
	tau    float64
	name   string
}

var servingRE = regexp.MustCompile(`serving on (\S+):(\d+) `)

// startEncoderJudge starts the worker with python, the repository's worker package
// (root/trainer/worker/torch) and the sentence-transformers folder model, and
// configures it.
func startEncoderJudge(python, root, model string) (*encoderJudge, error) {
	token, tokenFile, err := writeToken()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(python, "-m", "espo_worker", "--listen", "127.0.0.1:0", "--model", "tiny", "--device", "cpu",
		"--threads", "2", "--drain-quiet", "1", "--token-file", tokenFile)
	cmd.Dir = filepath.Join(root, "trainer", "worker", "torch")
	cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1")
	addr, err := serve(cmd)
	if err != nil {
		return nil, err
	}
	r, err := worker.Dial(addr, nil, token)
	if err != nil {
		_ = cmd.Process.Kill()
		return nil, err
	}
	j := &encoderJudge{cmd: cmd, remote: r, cache: embedding.NewCache(r)}
	ctx, cancel := context.WithTimeout(context.Background(), encoderStartTimeout)
	defer cancel()
	info, err := r.Client().Configure(ctx, &workerpb.ConfigureRequest{Seed: 1,
		Options: map[string]string{"pretrained": "tiny", "embedder_model": model}})
	if err != nil {
		j.close()
		return nil, fmt.Errorf("configuring the encoder worker with %s: %w", model, err)
	}
	j.name = info.GetInfo().GetEncoder()
	if j.tau, err = trainingv1alpha1.DefaultEncoderIntentThreshold.Float64(); err != nil {
		j.close()
		return nil, err
	}
	return j, nil
}

// writeToken writes a fresh worker token to a file of its own.
func writeToken() (token, path string, err error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", "", err
	}
	f, err := os.CreateTemp("", "espo-results-token-")
	if err != nil {
		return "", "", err
	}
	defer f.Close()
	token = hex.EncodeToString(b)
	_, err = f.WriteString(token)
	return token, f.Name(), err
}

// serve starts cmd and returns the address it says it serves on, from its standard
// error; the rest of its standard error is dropped.
func serve(cmd *exec.Cmd) (string, error) {
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return "", err
	}
	if err := cmd.Start(); err != nil {
		return "", err
	}
	found := make(chan string, 1)
	go func() {
		s := bufio.NewScanner(stderr)
		for s.Scan() {
			if m := servingRE.FindStringSubmatch(s.Text()); m != nil {
				select {
				case found <- m[1] + ":" + m[2]:
				default:
				}
			}
		}
	}()
	select {
	case addr := <-found:
		return addr, nil
	case <-time.After(encoderStartTimeout):
		_ = cmd.Process.Kill()
		return "", fmt.Errorf("the encoder worker did not serve within %s", encoderStartTimeout)
	}
}

// startEncoderJudgeFor starts the judge of o: o.encoder with o.python, or the
// interpreter hack/setup-python.sh prints (building the environment on first use).
// Like the rest of hack/results it runs from the repository's root.
func startEncoderJudgeFor(o options) (*encoderJudge, error) {
	root, err := os.Getwd()
	if err != nil {
		return nil, err
	}
	python := o.python
	if python == "" {
		cmd := exec.Command(filepath.Join(root, "hack", "setup-python.sh"))
		cmd.Stderr = os.Stderr
		out, err := cmd.Output()
		if err != nil {
			return nil, fmt.Errorf("hack/setup-python.sh (run hack/results from the repository's root): %w", err)
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		python = lines[len(lines)-1]
	}
	return startEncoderJudge(python, root, o.encoder)
}

// close stops the worker.
func (j *encoderJudge) close() {
	_ = j.remote.Close()
	_ = j.cmd.Process.Signal(os.Interrupt)
	_ = j.cmd.Wait()
}

// passing counts the predicted intents whose cosine with the true one, pair by pair,
// reaches the judge's tau.
func (j *encoderJudge) passing(ctx context.Context, predicted, truth []string) (int, error) {
	n := 0
	for start := 0; start < len(predicted); start += embedPairs {
		end := min(start+embedPairs, len(predicted))
		vecs, err := j.remote.Embed(ctx, append(append([]string{}, predicted[start:end]...), truth[start:end]...))
		if err != nil {
			return 0, fmt.Errorf("the encoder judge: %w", err)
		}
		for i := range end - start {
			if espo.Cosine(vecs[i], vecs[end-start+i]) >= j.tau {
				n++
			}
		}
	}
	return n, nil
}

// embedPairs is how many pairs of texts one Embed call of passing sends: within the
// protocol's 2048 texts a call.
const embedPairs = 1024

// intentTally judges the intents of answers, the answers to the steps of ep, by
// embedding, and returns IntentAcc's tally: right intents over item-pool steps.
func (j *encoderJudge) intentTally(ctx context.Context, ep *dataset.Episode, answers []string, vocab map[string][]string) (tally, error) {
	var ts embedding.Texts
	for k := range ep.Steps {
		gt := ep.GroundTruth(&ep.Steps[k])
		if gt.Stage == espo.StagePool {
			ts.AddIntent(gt.Intent) // the requirement always, so the cache knows the dimension
		}
		ts.AddScored(&gt, answers[k])
	}
	if err := j.cache.Prefetch(ctx, &ts); err != nil {
		return tally{}, fmt.Errorf("the encoder judge: %w", err)
	}
	defer j.cache.Release()
	ev := metrics.NewEvaluator(metrics.Options{Tau: j.tau, Embedder: j.cache, Match: espo.IntentMatchEmbedding, Slots: vocab})
	if err := ev.Add(ep, answers); err != nil {
		return tally{}, err
	}
	m := ev.Report().Micro
	return count(m.IntentAcc, m.PoolSteps), nil
}
