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

package estimator

import (
	"slices"
	"testing"

	"github.com/espo-dev/espo-operator/espo"
)

// episodeWithIntent returns rewards of a one-GUI-step, one-pool-step episode with G
// = 2 whose candidates differ in their GUI and intent rewards by rollout.
func episodeWithIntent(gui0, gui1, intent0, intent1 float64) espo.EpisodeRewards {
	return espo.EpisodeRewards{G: 2, Stages: []espo.Stage{espo.StageGUI, espo.StagePool},
		Step:  []float64{0.5 + gui0, 0.5 + gui1, 0.5 + intent0, 0.5 + intent1},
		Stage: []float64{gui0, gui1, intent0, intent1}}
}

// TestShuffleCOUTUsesThePreviousEpisodes checks the shuffled-COUT control:
// the first episode gets no COUT advantage, each later one the COUT advantages of
// the episode before it, and the step advantages are untouched.
func TestShuffleCOUTUsesThePreviousEpisodes(t *testing.T) {
	for _, mode := range []espo.COUTMode{espo.COUTEpisode, espo.COUTRollout} {
		cfg := espo.DefaultAdvantageConfig()
		cfg.Mode = mode
		eps := []espo.EpisodeRewards{episodeWithIntent(0.5, -0.5, 0.5, 0), episodeWithIntent(-0.5, 0.5, 0.5, 0.5), episodeWithIntent(0.5, 0.5, 0.5, 0)}
		shuffled, err := New(ShuffledCOUT, cfg, false)
		if err != nil {
			t.Fatal(err)
		}
		var prevCOUT []float64
		for i, ep := range eps {
			got := make([]float64, len(ep.Step))
			c, err := shuffled.Episode(got, ep)
			if err != nil {
				t.Fatal(err)
			}
			own := make([]float64, ep.G)
			wantCOUT, _ := espo.COUTAdvantages(own, ep, cfg)
			if c != wantCOUT {
				t.Errorf("%s episode %d: reported COUT %+v, want its own %+v", mode, i, c, wantCOUT)
			}
			want := make([]float64, len(ep.Step))
			if err := espo.StepAdvantages(want, ep.Step, ep.G, cfg.Eps); err != nil {
				t.Fatal(err)
			}
			if prevCOUT != nil {
				espo.FuseAdvantages(want, prevCOUT, cfg.W)
			}
			if !slices.Equal(got, want) {
				t.Errorf("%s episode %d: advantages %v, want %v", mode, i, got, want)
			}
			unshuffled := make([]float64, len(ep.Step))
			if _, err := espo.Advantages(unshuffled, ep, cfg); err != nil {
				t.Fatal(err)
			}
			if i > 0 && slices.Equal(got, unshuffled) {
				t.Errorf("%s episode %d: the shuffled advantages equal the episode's own", mode, i)
			}
			prevCOUT = own
		}
	}
}
