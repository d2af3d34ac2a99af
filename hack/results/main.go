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

// Command results runs the paper's comparison on generated SmartSpot data — SFT only,
// step-wise GRPO, ESPO and its ablations (w = 0, phi only, psi only) — with the same
// budget each, over several seeds, and writes docs/results.md with the table and a
// learning-curve plot.
//
//	go run ./hack/results -seeds 1,2,3 -episodes 60 -sft-epochs 1 -epochs 3
package main

import (
	"context"
	"flag"
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/espo-dev/espo-operator/api/v1alpha1"
	"github.com/espo-dev/espo-operator/trainer"
	"github.com/espo-dev/espo-operator/trainer/worker"
	"github.com/espo-dev/espo-operator/trainer/worker/cpu"
	"github.com/espo-dev/espo-operator/trainer/workerpb"
)

// variant is one arm of the comparison.
type variant struct {
	name  string
	apply func(s *v1alpha1.ESPOJobSpec)
}

var variants = []variant{
	{"sft", func(s *v1alpha1.ESPOJobSpec) { s.Algorithm.Name = v1alpha1.AlgorithmSFT }},
	{"grpo", func(s *v1alpha1.ESPOJobSpec) { s.Algorithm.Name = v1alpha1.AlgorithmGRPO }},
	{"espo", func(s *v1alpha1.ESPOJobSpec) {}},
	{"espo w=0", func(s *v1alpha1.ESPOJobSpec) { s.Rewards.COUT.Weight = "0" }},
	{"espo phi only", func(s *v1alpha1.ESPOJobSpec) { s.Rewards.COUT.Gates = v1alpha1.COUTGUIGate }},
	{"espo psi only", func(s *v1alpha1.ESPOJobSpec) { s.Rewards.COUT.Gates = v1alpha1.COUTDecisionGate }},
}

type options struct {
	seeds               []int64
	episodes, sftEpochs int
	epochs, groupSize   int
	learningRate, out   string
	hidden              int
}

func main() {
	o := options{}
	var seeds string
	flag.StringVar(&seeds, "seeds", "1,2,3", "comma-separated seeds; each seeds both the data and the training")
	flag.IntVar(&o.episodes, "episodes", 60, "generated episodes per seed (split 8:1:1)")
	flag.IntVar(&o.sftEpochs, "sft-epochs", 1, "SFT cold-start epochs (sft runs sft-epochs + epochs of SFT)")
	flag.IntVar(&o.epochs, "epochs", 3, "epochs of the algorithm")
	flag.IntVar(&o.groupSize, "group-size", 5, "candidates per step (G)")
	flag.IntVar(&o.hidden, "hidden", 32, "hidden units of the CPU policy")
	flag.StringVar(&o.learningRate, "learning-rate", "0.01", "AdamW learning rate of the CPU policy")
	flag.StringVar(&o.out, "out", "docs", "folder of results.md and results-curve.png")
	flag.Parse()
	for _, s := range strings.Split(seeds, ",") {
		v, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
		if err != nil {
			fatal(fmt.Errorf("-seeds: %w", err))
		}
		o.seeds = append(o.seeds, v)
	}
	results := map[string][]*trainer.Report{}
	for _, v := range variants {
		for _, seed := range o.seeds {
			start := time.Now()
			rep, err := runOne(o, v, seed)
			if err != nil {
				fatal(fmt.Errorf("%s seed %d: %w", v.name, seed, err))
			}
			fmt.Fprintf(os.Stderr, "%-14s seed %d: RecAcc %.3f IntentAcc %.3f StepSR %.3f (%s)\n", v.name, seed,
				rep.Test.RecommendationAccuracy, rep.Test.IntentAccuracy, rep.Test.StepSuccessRate, time.Since(start).Round(time.Second))
			results[v.name] = append(results[v.name], rep)
		}
	}
	if err := writeResults(o, results, os.Args[1:]); err != nil {
		fatal(err)
	}
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "results:", err)
	os.Exit(1)
}

// runOne trains one variant on one seed's data.
func runOne(o options, v variant, seed int64) (*trainer.Report, error) {
	c := &trainer.Config{}
	sft := int32(o.sftEpochs)
	c.Spec.Datasets.Sources = []v1alpha1.DatasetSource{{Name: "synthetic",
		Synthetic: &v1alpha1.SyntheticSource{Episodes: int32(o.episodes), Seed: seed}}}
	c.Spec.Datasets.Split.Seed = seed
	c.Spec.Algorithm = v1alpha1.AlgorithmSpec{SFTEpochs: &sft, Epochs: int32(o.epochs), GroupSize: int32(o.groupSize),
		LearningRate: v1alpha1.Decimal(o.learningRate), Seed: seed}
	c.Spec.Model.CPU = &v1alpha1.CPUPolicySpec{HiddenSize: int32(o.hidden)}
	v.apply(&c.Spec)
	c.Spec.Default()
	t, err := trainer.New(c, trainer.Options{Workers: []workerpb.WorkerClient{worker.LocalClient(cpu.New(0))}, Log: logr.Discard()})
	if err != nil {
		return nil, err
	}
	return t.Run(context.Background())
}

// metric reads one test metric of a report.
type metric struct {
	name string
	get  func(r *trainer.EvalResult) float64
}

var metrics = []metric{
	{"EleAcc", func(r *trainer.EvalResult) float64 { return r.ElementAccuracy }},
	{"Op F1", func(r *trainer.EvalResult) float64 { return r.OperationF1 }},
	{"StepSR", func(r *trainer.EvalResult) float64 { return r.StepSuccessRate }},
	{"IntentAcc", func(r *trainer.EvalResult) float64 { return r.IntentAccuracy }},
	{"RecAcc", func(r *trainer.EvalResult) float64 { return r.RecommendationAccuracy }},
}

// meanStd returns the mean and the unbiased standard deviation of xs.
func meanStd(xs []float64) (mean, std float64) {
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	if len(xs) < 2 {
		return mean, 0
	}
	for _, x := range xs {
		std += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(std / float64(len(xs)-1))
}

func writeResults(o options, results map[string][]*trainer.Report, args []string) error {
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	if err := plotCurves(filepath.Join(o.out, "results-curve.png"), results); err != nil {
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# Results: SFT, GRPO, ESPO and its ablations on generated SmartSpot data\n\n")
	fmt.Fprintf(&b, "Test-split metrics (%%), mean ± standard deviation over seeds %v; %d generated episodes per seed "+
		"(split 8:1:1 by episode), %d SFT epoch(s) then %d epochs of each algorithm (SFT only: %d epochs of SFT), "+
		"G = %d, the CPU reference policy (hidden %d), learning rate %s. Every arm takes the same number of optimizer steps.\n\n",
		o.seeds, o.episodes, o.sftEpochs, o.epochs, o.sftEpochs+o.epochs, o.groupSize, o.hidden, o.learningRate)
	b.WriteString("| method |")
	for _, m := range metrics {
		fmt.Fprintf(&b, " %s |", m.name)
	}
	b.WriteString("\n|---|" + strings.Repeat("---|", len(metrics)) + "\n")
	for _, v := range variants {
		fmt.Fprintf(&b, "| %s |", v.name)
		for _, m := range metrics {
			var xs []float64
			for _, r := range results[v.name] {
				xs = append(xs, m.get(r.Test))
			}
			mean, std := meanStd(xs)
			fmt.Fprintf(&b, " %.1f ± %.1f |", 100*mean, 100*std)
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "\nReproduce:\n\n    go run ./hack/results %s\n\n", strings.Join(args, " "))
	b.WriteString("![Validation RecAcc by optimizer step](results-curve.png)\n\n")
	b.WriteString("What these numbers do and do not show: [results-discussion.md](results-discussion.md).\n")
	return os.WriteFile(filepath.Join(o.out, "results.md"), []byte(b.String()), 0o644)
}

// plotCurves draws each variant's validation RecAcc after every epoch, averaged over
// seeds, against the optimizer step.
func plotCurves(path string, results map[string][]*trainer.Report) error {
	p := plot.New()
	p.Title.Text = "Validation recommendation accuracy"
	p.X.Label.Text = "optimizer step"
	p.Y.Label.Text = "RecAcc"
	for i, v := range variants {
		reps := results[v.name]
		if len(reps) == 0 || len(reps[0].Validation) == 0 {
			continue
		}
		pts := make(plotter.XYs, len(reps[0].Validation))
		for e := range pts {
			for _, r := range reps {
				pts[e].X = float64(r.Validation[e].Step)
				pts[e].Y += r.Validation[e].RecommendationAccuracy / float64(len(reps))
			}
		}
		line, err := plotter.NewLine(pts)
		if err != nil {
			return err
		}
		line.Color = plotutil.Color(i)
		line.Dashes = plotutil.Dashes(i)
		p.Add(line)
		p.Legend.Add(v.name, line)
	}
	p.Y.Min, p.Y.Max = 0, 1
	p.Legend.Top = true
	p.Legend.Left = true
	p.BackgroundColor = color.White
	return p.Save(8*vg.Inch, 5*vg.Inch, path)
}
