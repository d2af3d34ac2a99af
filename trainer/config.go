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

// Package trainer is the trainer process: it reads the resolved run configuration,
// loads the datasets, drives policy workers through the ESPO (or GRPO, or SFT) loop,
// evaluates, checkpoints and reports progress.
package trainer

import (
	"errors"
	"fmt"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
	"github.com/espo-dev/espo-operator/espo"
	"github.com/espo-dev/espo-operator/trainer/intents"
	"github.com/espo-dev/espo-operator/trainer/permanent"
)

// Config is the run config as the operator writes it (trainingv1alpha1.RunConfig):
// the job's spec and where the run keeps its files. Resolve turns it into Settings.
type Config = trainingv1alpha1.RunConfig

// JobRef identifies an ESPOJob.
type JobRef = trainingv1alpha1.JobRef

// LoadConfig reads a Config from a YAML (or JSON) file, refusing unknown fields, and
// resolves it (Resolve).
func LoadConfig(path string) (*Settings, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the run config: %w", err)
	}
	c := &Config{}
	if err := yaml.UnmarshalStrict(raw, c); err != nil {
		return nil, fmt.Errorf("run config %s: %w", path, err)
	}
	s, err := Resolve(c)
	if err != nil {
		return nil, fmt.Errorf("run config %s: %w", path, err)
	}
	return s, nil
}

// Settings is one run's configuration, resolved once from its Config: every
// hyper-parameter of the run, parsed from the spec's decimal strings into the espo
// core's configurations and the trainer's own, so that nothing downstream reads a
// default or parses a field again (the trainer's GRPOConfig).
type Settings struct {
	// Config is the run config, its spec defaulted.
	Config *Config
	// Rewards, Advantage and Loss are the espo core's configurations: the rewards,
	// the COUT advantage and the clipped, KL-penalised loss.
	Rewards   espo.RewardConfig
	Advantage espo.AdvantageConfig
	Loss      espo.LossConfig
	// LearningRate and MaxGradNorm drive the workers' optimizer steps;
	// SFTLearningRate is the rate of the SFT epochs' steps.
	LearningRate, SFTLearningRate, MaxGradNorm float64
	// Optimizer is spec.algorithm.optimizer: the AdamW constants and the schedule
	// of the learning rate.
	Optimizer Optimizer
	// Temperature is the sampling temperature, GroupSize the candidates G of every
	// step (rollouts of every seed), Seed the run's seed.
	Temperature float64
	GroupSize   int
	Seed        uint64
	// Split holds the train, validation and test fractions of the pooled sources.
	Split [3]float64
	// EarlyStopping is spec.earlyStopping parsed; nil without it.
	EarlyStopping *EarlyStopping
	// CheckpointEvery is spec.checkpoint.everySteps: a checkpoint after every that
	// many steps (0: at the end of each epoch only).
	CheckpointEvery int64
	// StatusInterval bounds the rate of the step reports (spec.trainer.statusInterval;
	// 0 reports every step).
	StatusInterval time.Duration
	// WorkerOptions are the Configure options of the policy workers: spec.model's
	// settings (workerOptions) and the sentence encoder of
	// spec.rewards.intent.embedder.worker (embedder_model).
	WorkerOptions map[string]string
	// Export is spec.export checked; nil without it.
	Export *Export
}

// EarlyStopping is spec.earlyStopping parsed: each condition acts once it held for
// Patience evaluations in a row.
type EarlyStopping struct {
	Patience int
	// Target stops the run once the validation metric named TargetMetric (its API
	// name) reaches it; nil without spec.earlyStopping.target.
	Target       *Threshold
	TargetMetric string
	// MinReward, when set, stops the run once an epoch's mean step reward stays below
	// it.
	MinReward *Threshold
}

// Threshold is a decimal of the spec, parsed, with the value as the spec writes it
// for messages.
type Threshold struct {
	Value   float64
	Written string
}

// Resolve defaults c's spec (in place) and turns its decimal strings into Settings,
// reporting every field that does not parse or that a rule refuses, by its path: the
// rules the API server applies, for a run config that did not pass through it. Its
// errors carry the ConfigInvalid outcome: a restart would meet them again.
func Resolve(c *Config) (*Settings, error) {
	c.Spec.Default()
	r, err := resolve(c)
	if err != nil {
		return nil, permanent.ConfigInvalid(err)
	}
	return r, nil
}

// resolve parses and checks the defaulted c.
func resolve(c *Config) (*Settings, error) {
	p := decimalParser{}
	s := &c.Spec
	r := &Settings{
		Config: c,
		Rewards: espo.RewardConfig{
			Format:        p.parse("spec.rewards.format", s.Rewards.Format),
			GUIBoth:       p.parse("spec.rewards.gui.exact", s.Rewards.GUI.Exact),
			GUITypeOnly:   p.parse("spec.rewards.gui.typeOnly", s.Rewards.GUI.TypeOnly),
			GUIValueOnly:  p.parse("spec.rewards.gui.valueOnly", s.Rewards.GUI.ValueOnly),
			GUINeither:    p.parse("spec.rewards.gui.wrong", s.Rewards.GUI.Wrong),
			TextF1:        p.parse("spec.rewards.gui.textF1Threshold", s.Rewards.GUI.TextF1Threshold),
			Intent:        p.parse("spec.rewards.intent.correct", s.Rewards.Intent.Correct),
			Tau:           p.parse("spec.rewards.intent.threshold", s.Rewards.Intent.Tau()),
			Match:         espo.IntentMatch(s.Rewards.Intent.Match),
			SlotScore:     espo.SlotScore(s.Rewards.Intent.SlotScore),
			DecisionRight: p.parse("spec.rewards.decision.correct", s.Rewards.Decision.Correct),
			DecisionWrong: p.parse("spec.rewards.decision.wrong", s.Rewards.Decision.Wrong),
		},
		Loss: espo.LossConfig{
			EpsLow:   p.parse("spec.algorithm.clip.low", s.Algorithm.Clip.Low),
			EpsHigh:  p.parse("spec.algorithm.clip.high", s.Algorithm.Clip.High),
			DualClip: p.parse("spec.algorithm.clip.dual", s.Algorithm.Clip.Dual),
			Beta:     p.parse("spec.algorithm.kl.coefficient", s.Algorithm.KL.Coefficient),
			KL:       espo.KLEstimator(s.Algorithm.KL.Estimator),
			Agg:      espo.Aggregation(s.Algorithm.LossAggregation),
			ISCap:    p.parse("spec.algorithm.samplerCorrection.cap", s.Algorithm.SamplerCorrectionCap(s.Model.Engine())),
		},
		LearningRate:    p.parse("spec.algorithm.learningRate", s.Algorithm.LearningRate),
		SFTLearningRate: p.parse("spec.algorithm.sftLearningRate", s.Algorithm.SFTRate()),
		MaxGradNorm:     p.parse("spec.algorithm.maxGradNorm", s.Algorithm.MaxGradNorm),
		Temperature:     p.parse("spec.algorithm.samplingTemperature", s.Algorithm.SamplingTemperature),
		GroupSize:       int(s.Algorithm.GroupSize),
		Seed:            uint64(s.Algorithm.Seed),
		Split: [3]float64{
			p.parse("spec.datasets.split.train", s.Datasets.Split.Train),
			p.parse("spec.datasets.split.validation", s.Datasets.Split.Validation),
			p.parse("spec.datasets.split.test", s.Datasets.Split.Test),
		},
		EarlyStopping: resolveEarlyStopping(&p, s.EarlyStopping),
		WorkerOptions: workerOptions(&s.Model),
	}
	setOption(r.WorkerOptions, "embedder_model", encoderOption(s))
	if cp := s.Checkpoint; cp != nil {
		r.CheckpointEvery = int64(cp.EverySteps)
	}
	if d := s.Trainer.StatusInterval; d != nil {
		r.StatusInterval = d.Duration
	}
	adv := espo.AdvantageConfigFor(r.Rewards)
	adv.K = p.parse("spec.rewards.cout.temperature", s.Rewards.COUT.Temperature)
	adv.W = p.parse("spec.rewards.cout.weight", s.Rewards.COUT.Weight)
	adv.Mode = espo.COUTMode(s.Rewards.COUT.Mode)
	adv.Gates = espo.Gates(s.Rewards.COUT.Gates)
	adv.EmptyGate = p.parse("spec.rewards.cout.emptyGate", s.Rewards.COUT.EmptyGate)
	r.Advantage = adv
	r.Optimizer = resolveOptimizer(&p, s.Algorithm.Optimizer)
	export, exportErr := resolveExport(c)
	r.Export = export
	dropout := 0.0
	if l := s.Model.LoRA; l != nil && l.Dropout != "" {
		dropout = p.parse(loraDropoutField, l.Dropout)
	}
	if p.err != nil {
		return nil, p.err
	}
	return r, errors.Join(
		fieldErr("spec.rewards", r.Rewards.Validate()),
		fieldErr("spec.rewards.cout", r.Advantage.Validate()),
		fieldErr("spec.algorithm", r.Loss.Validate()),
		intents.CheckEmbedder(s.Rewards.Intent.Embedder),
		intents.CheckEncoderWorker(s),
		checkDropout(dropout),
		r.Optimizer.check(),
		checkRollout(&s.Model),
		checkSharding(&s.Model),
		checkModelFolders(s),
		exportErr,
	)
}

// resolveEarlyStopping parses es; nil without it.
func resolveEarlyStopping(p *decimalParser, es *trainingv1alpha1.EarlyStoppingSpec) *EarlyStopping {
	if es == nil {
		return nil
	}
	out := &EarlyStopping{Patience: max(int(es.Patience), 1)}
	if t := es.Target; t != nil {
		out.Target = &Threshold{Value: p.parse("spec.earlyStopping.target.value", t.Value), Written: string(t.Value)}
		out.TargetMetric = string(t.Metric)
	}
	if es.MinReward != "" {
		out.MinReward = &Threshold{Value: p.parse("spec.earlyStopping.minReward", es.MinReward), Written: string(es.MinReward)}
	}
	return out
}

// Optimizer is spec.algorithm.optimizer parsed: the AdamW constants of every step and
// the schedule of its learning rate (espo.ScheduledRate).
type Optimizer struct {
	Beta1, Beta2, Epsilon, WeightDecay float64
	WarmupSteps                        int64
	Schedule                           espo.Schedule
}

// optimizerField is the path of spec.algorithm.optimizer in errors.
const optimizerField = "spec.algorithm.optimizer"

// resolveOptimizer parses o, which the spec's defaults set.
func resolveOptimizer(p *decimalParser, o *trainingv1alpha1.OptimizerSpec) Optimizer {
	d := *o
	return Optimizer{
		Beta1:       p.parse(optimizerField+".beta1", d.Beta1),
		Beta2:       p.parse(optimizerField+".beta2", d.Beta2),
		Epsilon:     p.parse(optimizerField+".epsilon", d.Epsilon),
		WeightDecay: p.parse(optimizerField+".weightDecay", d.WeightDecay),
		WarmupSteps: int64(d.WarmupSteps),
		Schedule:    espo.Schedule(d.Schedule),
	}
}

// check applies to the optimizer the API server's rules, for a run config that did
// not pass through it: betas in (0, 1) (the worker protocol reads a beta of 0 as
// unset), epsilon greater than 0, weight decay and warm-up steps at least 0, and a
// known schedule.
func (o Optimizer) check() error {
	var errs []error
	for _, b := range []struct {
		name string
		v    float64
	}{{"beta1", o.Beta1}, {"beta2", o.Beta2}} {
		if !(b.v > 0 && b.v < 1) {
			errs = append(errs, fmt.Errorf("%s.%s: %g must be greater than 0 and less than 1", optimizerField, b.name, b.v))
		}
	}
	if !(o.Epsilon > 0) {
		errs = append(errs, fmt.Errorf("%s.epsilon: %g must be greater than 0", optimizerField, o.Epsilon))
	}
	if !(o.WeightDecay >= 0) {
		errs = append(errs, fmt.Errorf("%s.weightDecay: %g must be at least 0", optimizerField, o.WeightDecay))
	}
	if o.WarmupSteps < 0 {
		errs = append(errs, fmt.Errorf("%s.warmupSteps: %d must be at least 0", optimizerField, o.WarmupSteps))
	}
	switch o.Schedule {
	case espo.ScheduleConstant, espo.ScheduleLinear, espo.ScheduleCosine:
	default:
		errs = append(errs, fmt.Errorf("%s.schedule: %q is none of constant, linear and cosine", optimizerField, o.Schedule))
	}
	return errors.Join(errs...)
}

// loraDropoutField is the path of spec.model.lora.dropout in errors.
const loraDropoutField = "spec.model.lora.dropout"

// checkDropout applies to spec.model.lora.dropout the API server's rule: at least 0
// and less than 1 (the worker receives the Decimal as it is written).
func checkDropout(v float64) error {
	if v < 0 || v >= 1 {
		return fmt.Errorf("%s: %g must be at least 0 and less than 1", loraDropoutField, v)
	}
	return nil
}

// decimalParser parses decimal fields, collecting one error per bad field.
type decimalParser struct{ err error }

func (p *decimalParser) parse(path string, d trainingv1alpha1.Decimal) float64 {
	v, err := d.Float64()
	if err != nil {
		p.err = errors.Join(p.err, fmt.Errorf("%s: %w", path, err))
	}
	return v
}

func fieldErr(path string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", path, err)
}

// workerOptions passes the model section of the spec to the workers, as the Configure
// options the workers read: pretrained; the CPU policy's hidden, hash_bits,
// max_intent_words and arch; and the PyTorch worker's dtype, lora_r, lora_alpha,
// lora_dropout, lora_targets (comma-separated), gradient_checkpointing ("true" or
// "false"), attn_implementation, max_new_tokens and max_prompt_tokens; and with the
// vllm rollout engine rollout_engine ("vllm"), vllm_gpu_memory_utilization (the
// Decimal as written), vllm_max_model_len, vllm_enforce_eager ("true" or "false")
// and vllm_cpu_kv_cache_gib; and sharding ("sharded" or "hybrid" only). A field left unset sends no option, so the worker keeps
// its own default (for the PyTorch worker its flag, from $ESPO_WORKER_<OPTION>); an
// option sent wins over that default. The huggingface engine, the default, sends no
// rollout option, so that a worker that knows none sees nothing new.
func workerOptions(m *trainingv1alpha1.ModelSpec) map[string]string {
	o := map[string]string{}
	if m.Pretrained != "" {
		o["pretrained"] = m.Pretrained
		if m.Weights != nil { // the worker container mounts the claim's path there
			o["pretrained"] = path.Join(trainingv1alpha1.ModelsMountPath, m.Pretrained)
		}
	}
	if m.CPU != nil {
		o["hidden"] = strconv.Itoa(int(m.CPU.HiddenSize))
		o["hash_bits"] = strconv.Itoa(int(m.CPU.FeatureBits))
		o["max_intent_words"] = strconv.Itoa(int(m.CPU.MaxIntentWords))
		if m.CPU.Architecture != "" {
			o["arch"] = string(m.CPU.Architecture)
		}
	}
	setOption(o, "dtype", string(m.DType))
	if l := m.LoRA; l != nil {
		o["lora_r"] = strconv.Itoa(int(l.Rank))
		setCount(o, "lora_alpha", l.Alpha)
		setOption(o, "lora_dropout", string(l.Dropout)) // a Decimal, which Python's float() reads as it is
		setOption(o, "lora_targets", strings.Join(l.TargetModules, ","))
	}
	if g := m.GradientCheckpointing; g != nil {
		o["gradient_checkpointing"] = strconv.FormatBool(*g)
	}
	setOption(o, "attn_implementation", string(m.AttnImplementation))
	setCount(o, "max_new_tokens", m.MaxNewTokens)
	setCount(o, "max_prompt_tokens", m.MaxPromptTokens)
	if m.Shards() { // replicated sends nothing: the worker's default
		o["sharding"] = string(m.Sharding)
	}
	if r := m.Rollout; r != nil && m.Engine() == trainingv1alpha1.RolloutVLLM {
		o["rollout_engine"] = string(trainingv1alpha1.RolloutVLLM)
		setOption(o, "vllm_gpu_memory_utilization", string(r.GPUMemoryUtilization))
		setCount(o, "vllm_max_model_len", r.MaxModelLen)
		if e := r.EnforceEager; e != nil {
			o["vllm_enforce_eager"] = strconv.FormatBool(*e)
		}
		setCount(o, "vllm_cpu_kv_cache_gib", r.CPUKVCacheGiB)
	}
	return o
}

// encoderOption is the Configure option embedder_model of spec, "" without
// spec.rewards.intent.embedder.worker: its model folder, under the models volume
// when spec.model.weights is set (as workerOptions places pretrained).
func encoderOption(spec *trainingv1alpha1.ESPOJobSpec) string {
	e := spec.Rewards.Intent.Embedder
	if e == nil || e.Worker == nil {
		return ""
	}
	if spec.Model.Weights != nil {
		return path.Join(trainingv1alpha1.ModelsMountPath, e.Worker.Model)
	}
	return e.Worker.Model
}

// checkModelFolders applies the API server's rule on the folders a worker finds
// under spec.model.weights (pretrained, and the encoder of
// spec.rewards.intent.embedder.worker), for a run config that did not pass through
// it: relative to the claim, never climbing out of it with "..". An absolute path
// would be joined under ModelsMountPath again and name a folder that is not there.
func checkModelFolders(s *trainingv1alpha1.ESPOJobSpec) error {
	if s.Model.Weights == nil {
		return nil
	}
	var errs []error
	check := func(field, folder string) {
		if path.IsAbs(folder) || slices.Contains(strings.Split(folder, "/"), "..") {
			errs = append(errs, fmt.Errorf("%s: %q: with spec.model.weights it is a folder inside the weights claim's path, "+
				"mounted at %s: write it relative to the claim, without a leading '/' or '..'", field, folder, trainingv1alpha1.ModelsMountPath))
		}
	}
	check("spec.model.pretrained", s.Model.Pretrained)
	if e := s.Rewards.Intent.Embedder; e != nil && e.Worker != nil {
		check("spec.rewards.intent.embedder.worker.model", e.Worker.Model)
	}
	return errors.Join(errs...)
}

// defaultMaxNewTokens is the PyTorch worker's max_new_tokens when spec.model sets
// none, which the rule on spec.model.rollout.maxModelLen counts with, as the API
// server's does.
const defaultMaxNewTokens = 256

// checkRollout applies to spec.model.rollout the rules the API server applies, for a
// run config that did not pass through it: the vllm engine only with worker cuda (it
// runs beside the PyTorch worker), the vllm settings only with the vllm engine,
// gpuMemoryUtilization in (0, 1], and maxModelLen at least maxPromptTokens +
// maxNewTokens (256 when unset) when maxPromptTokens is set.
func checkRollout(m *trainingv1alpha1.ModelSpec) error {
	r := m.Rollout
	if r == nil {
		return nil
	}
	const field = "spec.model.rollout"
	var errs []error
	if m.Engine() == trainingv1alpha1.RolloutVLLM {
		if m.Worker != trainingv1alpha1.WorkerCUDA {
			errs = append(errs, fmt.Errorf("%s.engine: vllm runs only beside the PyTorch worker, not with spec.model.worker %s: set worker: cuda, or remove rollout", field, m.Worker))
		}
	} else if r.GPUMemoryUtilization != "" || r.MaxModelLen != 0 || r.EnforceEager != nil || r.CPUKVCacheGiB != 0 {
		errs = append(errs, fmt.Errorf("%s: gpuMemoryUtilization, maxModelLen, enforceEager and cpuKVCacheGiB are settings of the vllm engine, which the %s engine would ignore: set engine: vllm or remove them", field, m.Engine()))
	}
	if d := r.GPUMemoryUtilization; d != "" {
		if v, err := d.Float64(); err != nil {
			errs = append(errs, fmt.Errorf("%s.gpuMemoryUtilization: %w", field, err))
		} else if !(v > 0 && v <= 1) {
			errs = append(errs, fmt.Errorf("%s.gpuMemoryUtilization: %g must be greater than 0 and at most 1", field, v))
		}
	}
	if r.MaxModelLen < 0 {
		errs = append(errs, fmt.Errorf("%s.maxModelLen: %d must be at least 1", field, r.MaxModelLen))
	}
	if r.CPUKVCacheGiB < 0 || r.CPUKVCacheGiB > 1024 {
		errs = append(errs, fmt.Errorf("%s.cpuKVCacheGiB: %d not in [1, 1024]", field, r.CPUKVCacheGiB))
	}
	if r.MaxModelLen != 0 && m.MaxPromptTokens != 0 {
		answer := m.MaxNewTokens
		if answer == 0 {
			answer = defaultMaxNewTokens
		}
		if need := int64(m.MaxPromptTokens) + int64(answer); int64(r.MaxModelLen) < need {
			errs = append(errs, fmt.Errorf("%s.maxModelLen: %d is below maxPromptTokens + maxNewTokens = %d (an unset maxNewTokens counts as the worker's default, %d): raise it or leave it unset",
				field, r.MaxModelLen, need, defaultMaxNewTokens))
		}
	}
	return errors.Join(errs...)
}

// setOption sets the option name to v unless v is empty (the field is unset).
func setOption(o map[string]string, name, v string) {
	if v != "" {
		o[name] = v
	}
}

// setCount sets the option name to n unless n is 0 (the field is unset).
func setCount(o map[string]string, name string, n int32) {
	if n != 0 {
		o[name] = strconv.Itoa(int(n))
	}
}

// checkSharding refuses spec.model.sharding sharded or hybrid without the PyTorch
// worker, as the API server does.
func checkSharding(m *trainingv1alpha1.ModelSpec) error {
	if m.Shards() && m.Worker != trainingv1alpha1.WorkerCUDA {
		return fmt.Errorf("spec.model.sharding: %s splits the project's PyTorch workers' model among them, and spec.model.worker is %s: "+
			"set worker: cuda, or remove sharding", m.Sharding, m.Worker)
	}
	return nil
}

// Export is spec.export as the trainer acts on it: where the Hugging Face folder goes
// and what it holds.
type Export struct {
	// Dir is the folder the export replaces, as the pod sees it (the run config's
	// exportDir); Path is the same folder inside the claim, as status names it.
	Dir, Path string
	// Where names the target in errors, as the spec does.
	Where string
	// Merge adds the merged model to a LoRA export.
	Merge bool
	// BestBy is the validation metric (its API name) whose best checkpoint is
	// exported; empty for the final policy.
	BestBy string
}

// resolveExport checks spec.export against the rest of the run config, with the
// rules the API server applies, and returns it; nil without spec.export.
func resolveExport(c *Config) (*Export, error) {
	e := c.Spec.Export
	if e == nil {
		return nil, nil
	}
	const field = "spec.export"
	claim := e.PersistentVolumeClaim
	out := &Export{Dir: c.ExportDir, Path: claim.Path, Merge: e.Merge, BestBy: string(e.BestBy),
		Where: fmt.Sprintf("%s.persistentVolumeClaim (claim %s, path %q)", field, claim.ClaimName, claim.Path)}
	var errs []error
	if c.ExportDir == "" {
		errs = append(errs, fmt.Errorf("%s: the run config has no exportDir, the folder where the claim's path is mounted: run the job through the operator, or set exportDir", field))
	}
	if w := c.Spec.Model.Worker; w != trainingv1alpha1.WorkerCUDA {
		errs = append(errs, fmt.Errorf("%s: it writes the PyTorch worker's model as a Hugging Face folder, and spec.model.worker is %s: set worker: cuda, or remove export", field, w))
	}
	if e.Merge && c.Spec.Model.LoRA == nil {
		errs = append(errs, fmt.Errorf("%s.merge: it merges a LoRA adapter into its base model, and spec.model.lora is unset: set it, or remove merge", field))
	}
	if e.BestBy != "" {
		errs = append(errs, checkBestBy(c))
	}
	return out, errors.Join(errs...)
}

// checkBestBy refuses spec.export.bestBy in a run that keeps no checkpoints or
// evaluates no validation episodes (an environment with validationEpisodes 0); a
// recorded run whose split leaves no validation episode is refused once its
// datasets are loaded (checkValidationForBest).
func checkBestBy(c *Config) error {
	const field = "spec.export.bestBy"
	if c.Spec.Checkpoint == nil || c.CheckpointDir == "" {
		return fmt.Errorf("%s: it exports the best checkpoint, and the run keeps none: set spec.checkpoint, or remove bestBy to export the final policy", field)
	}
	if env := c.Spec.Datasets.Environment; env != nil && env.ValidationEpisodes != nil && *env.ValidationEpisodes == 0 {
		return fmt.Errorf("%s: it compares validation evaluations, and spec.datasets.environment.validationEpisodes is 0: raise it, or remove bestBy", field)
	}
	return nil
}
