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
	"encoding/json"
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
)

// bootstrapSeed seeds the resamples of the intervals, so results.md is reproducible.
const bootstrapSeed = 0x726573756c7473 // "results"

// armSummary is one arm's line of results.json.
type armSummary struct {
	Name  string `json:"name"`
	About string `json:"about"`
	// PerSeed[metric][seed] is the metric of each seed, pooled over its test users.
	PerSeed map[string][]number `json:"perSeed"`
	// VsGRPO[metric] is the difference to GRPO with its 95% interval.
	VsGRPO map[string][3]number `json:"vsGRPO"`
	// VsSFT[metric] is the difference to the sft arm with its 95% interval, for
	// the metrics of sftMetrics, when the sft arm ran.
	VsSFT map[string][3]number `json:"vsSFT,omitempty"`
	// SecondsPerSeed is the wall time of each seed's run.
	SecondsPerSeed []float64 `json:"secondsPerSeed"`
}

// number is a float64 that is written to JSON as null when it is NaN (a metric
// without trials).
type number float64

// MarshalJSON writes n, or null for NaN.
func (n number) MarshalJSON() ([]byte, error) {
	if math.IsNaN(float64(n)) {
		return []byte("null"), nil
	}
	return json.Marshal(float64(n))
}

// floats returns ns as float64s.
func floats(ns []number) []float64 {
	out := make([]float64, len(ns))
	for i, n := range ns {
		out[i] = float64(n)
	}
	return out
}

// summaries condenses the results, arm by arm in the order of o.arms.
func summaries(o options, res *results) []armSummary {
	base := res.arms[armGRPO].scores
	var out []armSummary
	for _, name := range o.arms {
		ar := res.arms[name]
		s := armSummary{Name: name, About: o.arm(name).about, PerSeed: map[string][]number{}, VsGRPO: map[string][3]number{}}
		for m, mt := range metricList {
			for _, v := range ar.scores.seedValues(m) {
				s.PerSeed[mt.name] = append(s.PerSeed[mt.name], number(v))
			}
			iv := pairedBootstrap(ar.scores, base, m, o.resamples, bootstrapSeed)
			s.VsGRPO[mt.name] = [3]number{number(iv.diff), number(iv.lo), number(iv.hi)}
		}
		if slices.Contains(o.arms, armSFT) && name != armSFT && name != armUntrained {
			s.VsSFT = map[string][3]number{}
			for _, m := range sftMetrics {
				iv := pairedBootstrap(ar.scores, res.arms[armSFT].scores, m, o.resamples, bootstrapSeed)
				s.VsSFT[metricList[m].name] = [3]number{number(iv.diff), number(iv.lo), number(iv.hi)}
			}
		}
		for _, w := range ar.wall {
			s.SecondsPerSeed = append(s.SecondsPerSeed, w.Seconds())
		}
		out = append(out, s)
	}
	return out
}

// writeResults writes results.md, results.json and results-curve.png to o.out
// (results-environment.* for the comparison in the simulated app).
func writeResults(o options, res *results, args []string) error {
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	sums := summaries(o, res)
	doc := map[string]any{"arms": sums, "validity": res.validity, "wallSeconds": res.Wall.Seconds()}
	if o.environment {
		doc["validity"] = res.environmentValidity
	}
	if res.encoderMetric >= 0 {
		doc["intentJudges"] = map[string]any{"encoder": res.encoder, "arms": intentJudgesOf(o, res)}
	}
	raw, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(o.out, o.stem()+".json"), append(raw, '\n'), 0o644); err != nil {
		return err
	}
	if err := plotCurves(filepath.Join(o.out, o.stem()+"-curve.png"), o, res); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(o.out, o.stem()+".md"), []byte(markdown(o, res, sums, args)), 0o644)
}

// markdown renders results.md.
func markdown(o options, res *results, sums []armSummary, args []string) string {
	var b strings.Builder
	held := heldOut(o)
	if o.environment {
		writeEnvironmentHeader(&b, o, res, held)
	} else {
		writeRecordedHeader(&b, o, res, held)
	}
	b.WriteString("\n## Test metrics\n\n")
	fmt.Fprintf(&b, "Percent, mean ± standard deviation over the seeds; below each, the difference to GRPO pooled over "+
		"every seed and test user, with its paired bootstrap 95%% interval (%d resamples of seeds, then of the test "+
		"users within each seed). **Bold**: the interval excludes 0.\n\n", o.resamples)
	b.WriteString("| method |")
	for _, mt := range metricList {
		fmt.Fprintf(&b, " %s |", mt.name)
	}
	b.WriteString("\n|---|" + strings.Repeat("---|", len(metricList)) + "\n")
	for _, s := range sums {
		fmt.Fprintf(&b, "| %s |", s.Name)
		for _, mt := range metricList {
			b.WriteString(" " + cell(s, mt.name) + " |")
		}
		b.WriteString("\n")
	}
	writeAgainstSFT(&b, o, sums)
	b.WriteString("\nThe arms:\n\n")
	for _, s := range sums {
		fmt.Fprintf(&b, "- **%s**: %s.\n", s.Name, s.About)
	}
	if res.encoderMetric >= 0 {
		writeIntentJudges(&b, o, res)
	}
	if len(held) > 0 {
		b.WriteString("\n## Held-out channels\n\nRecAcc on the test users of the channels no arm trained on, mean ± standard deviation over the seeds.\n\n")
		b.WriteString("| method | RecAcc |\n|---|---|\n")
		for _, name := range o.arms {
			mean, std := meanStd(res.heldOutRecAcc(name, held))
			fmt.Fprintf(&b, "| %s | %s |\n", name, pct(mean, std))
		}
	}
	fmt.Fprintf(&b, "\nReproduce:\n\n    go run ./hack/results %s\n\n", shellJoin(args))
	fmt.Fprintf(&b, "![Validation RecAcc by optimizer step](%s-curve.png)\n\n", o.stem())
	b.WriteString("What these numbers do and do not show: [results-discussion.md](results-discussion.md).\n")
	return b.String()
}

// writeRecordedHeader writes the title, the set-up and the validity checks of the
// comparison on recorded episodes.
func writeRecordedHeader(b *strings.Builder, o options, res *results, held []string) {
	b.WriteString("# Results: SFT, GRPO, ESPO and its ablations on generated SmartSpot data\n\n")
	fmt.Fprintf(b, "Generated by `hack/results`; do not edit by hand. %s data; seeds %v, each seeding the data and "+
		"the training. Per seed: %d training and %d validation users of %s, %d test users of %s (held out, never trained "+
		"or validated on: %s). SFT epochs: %d, then %d epochs of each method (SFT only: %d epochs of SFT), so every "+
		"trained arm takes the same optimizer steps; G = %d; the CPU policy (hidden %d), %s; intents "+
		"judged slot by slot and rewarded by slotScore %s; ablations and the upper bound in %s mode. Wall time of the "+
		"whole run: %s.\n\n",
		o.difficulty, o.seeds, o.trainEpisodes, o.valEpisodes, strings.Join(o.trainChannels, ", "), o.testEpisodes,
		strings.Join(o.testChannels, ", "), orNone(held), o.sftEpochs, o.epochs, o.sftEpochs+o.epochs, o.groupSize,
		o.hidden, o.rates(), o.slotScore, o.ablationMode, res.Wall)
	b.WriteString("## Validity of the test bed\n\n")
	fmt.Fprintf(b, "Measured on %d further users of the test channels per seed, before any arm is read. A rule with "+
		"no weights over the feature policy's evidence must score at most %.0f%% RecAcc, a rule that knows the "+
		"preferences at least %.0f%%, and the requirement with its preference values deleted must pass as an intent "+
		"at most %.0f%% of the time.\n\n", o.validityEpisodes, 100*maxRuleRecAcc, 100*minOracleRecAcc, 100*maxTemplateIntents)
	header, rule := "| seed | majority label | no-weights rule | oracle | template intent (slots) | template intent (hashed embedding) |",
		"|---|---|---|---|---|---|"
	if res.encoderMetric >= 0 {
		header, rule = header+" template intent (encoder) |", rule+"---|"
	}
	b.WriteString(header + " holds |\n" + rule + "---|\n")
	for _, v := range res.validity {
		fmt.Fprintf(b, "| %d | %.1f | %.1f | %.1f | %.1f | %.1f |", v.Seed, 100*v.Majority, 100*v.Rule, 100*v.Oracle,
			100*v.TemplateSlots, 100*v.TemplateEmbedding)
		if v.TemplateEncoder != nil {
			fmt.Fprintf(b, " %.1f |", 100*(*v.TemplateEncoder))
		}
		fmt.Fprintf(b, " %s |\n", yesNo(v.ok()))
	}
}

// intentJudges compares, for one arm, the two judges of its test intents over every
// seed and test user: the item-pool steps, those right by slots and by the encoder,
// those both judged alike, and those only one judged right.
type intentJudges struct {
	Arm         string  `json:"arm"`
	PoolSteps   float64 `json:"poolSteps"`
	BySlots     float64 `json:"bySlots"`
	ByEncoder   float64 `json:"byEncoder"`
	Agree       float64 `json:"agree"`
	SlotsOnly   float64 `json:"slotsOnly"`
	EncoderOnly float64 `json:"encoderOnly"`
}

// intentJudgesOf counts intentJudges for every arm that has intents. An episode has
// one item-pool step, so its two tallies say how each judge saw that step.
func intentJudgesOf(o options, res *results) []intentJudges {
	var out []intentJudges
	for _, name := range o.arms {
		j := intentJudges{Arm: name}
		for _, seed := range res.arms[name].scores {
			for _, ep := range seed {
				slots, enc := ep[metricIntent], ep[res.encoderMetric]
				j.PoolSteps += slots.den
				j.BySlots += slots.num
				j.ByEncoder += enc.num
				j.Agree += slots.den - math.Abs(slots.num-enc.num)
				j.SlotsOnly += max(0, slots.num-enc.num)
				j.EncoderOnly += max(0, enc.num-slots.num)
			}
		}
		if j.PoolSteps > 0 {
			out = append(out, j)
		}
	}
	return out
}

// writeIntentJudges renders the section that sets the two intent judges side by side.
func writeIntentJudges(b *strings.Builder, o options, res *results) {
	fmt.Fprintf(b, "\n## Intent judges\n\nEvery test intent judged twice: slot by slot (IntentAcc above, the run's own "+
		"judge) and by the cosine of %s's sentence embeddings at tau %s (IntentAcc (encoder)). Pooled over every seed "+
		"and test user; an episode has one item-pool step.\n\n", res.encoder, trainingv1alpha1.DefaultEncoderIntentThreshold)
	b.WriteString("| method | item-pool steps | right by slots | right by the encoder | judged alike | right by slots only | right by the encoder only |\n|---|---|---|---|---|---|---|\n")
	for _, j := range intentJudgesOf(o, res) {
		fmt.Fprintf(b, "| %s | %.0f | %.1f%% | %.1f%% | %.1f%% | %.0f | %.0f |\n", j.Arm, j.PoolSteps, 100*j.BySlots/j.PoolSteps,
			100*j.ByEncoder/j.PoolSteps, 100*j.Agree/j.PoolSteps, j.SlotsOnly, j.EncoderOnly)
	}
}

// sftMetrics are the metrics of the comparison with the sft arm: whether the
// reinforcement epochs keep the decisions the cold start taught, and what they add
// to the intent and the navigation.
var sftMetrics = []int{metricRec, metricIntent, metricStepSR}

// writeAgainstSFT writes each trained arm's difference to the sft arm in the
// metrics of sftMetrics, when the sft arm ran.
func writeAgainstSFT(b *strings.Builder, o options, sums []armSummary) {
	if !slices.Contains(o.arms, armSFT) {
		return
	}
	b.WriteString("\n## Against SFT\n\nThe difference of each arm to the sft arm (every arm starts from its SFT epochs; the sft " +
		"arm goes on with SFT for as many steps), pooled and with its paired bootstrap 95% interval as above. **Bold**: the " +
		"interval excludes 0.\n\n| method |")
	for _, m := range sftMetrics {
		fmt.Fprintf(b, " %s |", metricList[m].name)
	}
	b.WriteString("\n|---|" + strings.Repeat("---|", len(sftMetrics)) + "\n")
	for _, s := range sums {
		if s.VsSFT == nil {
			continue
		}
		fmt.Fprintf(b, "| %s |", s.Name)
		for _, m := range sftMetrics {
			b.WriteString(" " + difference(s.VsSFT[metricList[m].name]) + " |")
		}
		b.WriteString("\n")
	}
}

// difference writes a difference with its interval in points, bold when the
// interval excludes 0, "—" when the metric had no trials.
func difference(d [3]number) string {
	if math.IsNaN(float64(d[0])) {
		return "—"
	}
	out := fmt.Sprintf("%+.1f [%+.1f, %+.1f]", 100*d[0], 100*d[1], 100*d[2])
	if (interval{float64(d[0]), float64(d[1]), float64(d[2])}).excludesZero() {
		out = "**" + out + "**"
	}
	return out
}

// cell renders an arm's metric: mean ± std, and the difference to GRPO.
func cell(s armSummary, metric string) string {
	mean, std := meanStd(floats(s.PerSeed[metric]))
	if math.IsNaN(mean) {
		return "—"
	}
	out := pct(mean, std)
	if s.Name == armGRPO {
		return out
	}
	d := s.VsGRPO[metric]
	if math.IsNaN(float64(d[0])) {
		return out
	}
	return out + "<br>" + difference(d)
}

// shellJoin joins args as a shell reads them back: an argument with anything but
// letters, digits and ,./=_:+- is single-quoted.
func shellJoin(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = a
		if a == "" || strings.ContainsFunc(a, func(r rune) bool { return !strings.ContainsRune(safeShell, r) }) {
			out[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
	}
	return strings.Join(out, " ")
}

const safeShell = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789,./=_:+-"

func pct(mean, std float64) string {
	if math.IsNaN(mean) {
		return "—"
	}
	return fmt.Sprintf("%.1f ± %.1f", 100*mean, 100*std)
}

func yesNo(ok bool) string {
	if ok {
		return "yes"
	}
	return "**no**"
}

func orNone(xs []string) string {
	if len(xs) == 0 {
		return "none"
	}
	return strings.Join(xs, ", ")
}

// plotCurves draws each trained arm's validation RecAcc after every epoch, averaged
// over the seeds, against the optimizer step.
func plotCurves(path string, o options, res *results) error {
	p := plot.New()
	p.Title.Text = "Validation recommendation accuracy (training channels)"
	if o.environment {
		p.Title.Text = "Validation recommendation accuracy (episodes of the evaluation channels)"
	}
	p.X.Label.Text = "optimizer step"
	p.Y.Label.Text = "RecAcc"
	for i, name := range o.arms {
		curves := res.arms[name].curves
		if len(curves) == 0 || len(curves[0]) == 0 {
			continue
		}
		pts := make(plotter.XYs, len(curves[0]))
		for e := range pts {
			for _, c := range curves {
				pts[e].X = float64(c[e].Step)
				pts[e].Y += c[e].RecAcc / float64(len(curves))
			}
		}
		line, err := plotter.NewLine(pts)
		if err != nil {
			return err
		}
		line.Color = plotutil.Color(i)
		line.Dashes = plotutil.Dashes(i)
		p.Add(line)
		p.Legend.Add(name, line)
	}
	p.Y.Min, p.Y.Max = 0, 1
	p.Legend.Top = true
	p.Legend.Left = true
	p.BackgroundColor = color.White
	return p.Save(9*vg.Inch, 5*vg.Inch, path)
}
