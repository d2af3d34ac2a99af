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
	"os"
)

// How a saved state reaches the members of a gang. A replicated job's trainer
// resumes from a checkpoint folder that only its own pod mounts (its checkpoint
// claim may be ReadWriteOnce): a member elsewhere cannot open the file, so the
// trainer reads it and sends its content inline. A sharded job's pods all mount the
// claim, and each member reads its own shards.

// setups returns the Setup of each member: s itself, except that a member that does
// not read s.LoadPath itself (readsLoadPath) gets the file's content as State
// instead, read once for all of them. A file over MaxStateBytes is an error naming
// its size and the limit, and no member is configured.
func (g *Gang) setups(ctx context.Context, s Setup) ([]Setup, error) {
	out := make([]Setup, len(g.members))
	for i := range out {
		out[i] = s
	}
	if s.LoadPath == "" {
		return out, nil
	}
	reads := make([]bool, len(g.members))
	err := g.each(ctx, func(ctx context.Context, i int, m Member) (err error) {
		reads[i], err = readsLoadPath(ctx, m)
		return err
	})
	if err != nil {
		return nil, err
	}
	var state []byte
	for i := range out {
		if reads[i] {
			continue
		}
		if state == nil {
			if state, err = readState(s.LoadPath); err != nil {
				return nil, err
			}
		}
		out[i].LoadPath, out[i].State = "", state
	}
	return out, nil
}

// readsLoadPath is the one rule of which members open a load path themselves and
// which get the state inline:
//
//   - a member in this process (Local) reads it: the trainer has the checkpoint
//     folder;
//   - a Remote at a loopback address (localhost:<port>) reads it: it runs in the
//     trainer's pod, whose worker container mounts the checkpoint folder too (the
//     run config lists rank 0's workers so);
//   - a Remote elsewhere (a pod DNS name) runs in another pod, without the folder,
//     and gets the state inline, unless it reports reduces_gradients (Info, asked once
//     it is reachable): then it is a rank of a group whose rank 0 reads the path and
//     broadcasts the state (the PyTorch worker), so it gets the path as rank 0 does
//     and never opens it.
//
// Any other Member (one wrapping another) is taken to read the path, as a Member did
// before states went inline.
func readsLoadPath(ctx context.Context, m Member) (bool, error) {
	r, ok := m.(*Remote)
	if !ok || r.inTrainerPod() {
		return true, nil
	}
	d, err := r.describe(ctx)
	if err != nil {
		return false, err
	}
	return d.ReducesGradients, nil
}

// readState returns the content of the state file at path, or an error naming its
// size and the limit when it is over MaxStateBytes (checked before reading it).
func readState(path string) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("reading the state to send inline: %w", err)
	}
	if fi.IsDir() {
		return nil, fmt.Errorf("state %s is a sharded gang's folder of shards, which is never sent inline: "+
			"give every worker the checkpoint claim (a sharded job's pods all mount it), or resume with PyTorch workers", path)
	}
	if err := checkStateSize(fi.Size()); err != nil {
		return nil, fmt.Errorf("state %s: %w", path, err)
	}
	state, err := os.ReadFile(path)
	switch {
	case err != nil:
		return nil, fmt.Errorf("reading the state to send inline: %w", err)
	case len(state) == 0:
		return nil, fmt.Errorf("state %s is empty: a file Save wrote never is", path)
	}
	return state, checkStateSize(int64(len(state)))
}
