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

package localcluster

import (
	"bytes"
	"context"
	"io"
	"os"
	"time"

	"github.com/virtual-kubelet/virtual-kubelet/errdefs"
	"github.com/virtual-kubelet/virtual-kubelet/node/api"
)

// followPoll is how often a followed log is checked for more output.
const followPoll = 100 * time.Millisecond

// logs opens a container's log as opts asks (see provider.GetContainerLogs).
func (r *podRun) logs(ctx context.Context, container string, opts api.ContainerLogOpts) (io.ReadCloser, error) {
	c, run, err := r.logRun(container, opts.Previous)
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(c.logPath(run))
	if err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	start := b
	if opts.Tail > 0 {
		start = tail(b, opts.Tail, 0)
	}
	if !opts.Follow {
		return io.NopCloser(limited(bytes.NewReader(start), opts.LimitBytes)), nil
	}
	f := &followReader{ctx: ctx, r: r, c: c, run: run, path: c.logPath(run), offset: int64(len(b)),
		head: bytes.NewReader(start)}
	return &readCloser{Reader: limited(f, opts.LimitBytes), close: f.close}, nil
}

// logRun finds the container and the run whose log to serve.
func (r *podRun) logRun(container string, previous bool) (*containerRun, int32, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range append(append([]*containerRun{}, r.inits...), r.containers...) {
		if c.spec.Name != container {
			continue
		}
		if !previous {
			return c, c.restarts, nil
		}
		if c.restarts == 0 {
			return nil, 0, errdefs.InvalidInputf("container %q has not restarted: there is no previous log", container)
		}
		return c, c.restarts - 1, nil
	}
	return nil, 0, errdefs.NotFoundf("container %q is not in pod %s", container, r.pod.Name)
}

func limited(rd io.Reader, n int) io.Reader {
	if n <= 0 {
		return rd
	}
	return io.LimitReader(rd, int64(n))
}

type readCloser struct {
	io.Reader
	close func() error
}

func (rc *readCloser) Close() error { return rc.close() }

// followReader reads what was in the log when it was opened (head), then what the
// container writes after, until the container's run ends or ctx is done.
type followReader struct {
	ctx    context.Context
	r      *podRun
	c      *containerRun
	run    int32
	path   string
	offset int64
	head   *bytes.Reader
	file   *os.File
}

func (f *followReader) Read(p []byte) (int, error) {
	if f.head.Len() > 0 {
		return f.head.Read(p)
	}
	for {
		done := !f.running() // read once more after the end, for the last output
		n, err := f.readMore(p)
		if n > 0 || (err != nil && err != io.EOF) {
			return n, err
		}
		if done {
			return 0, io.EOF
		}
		select {
		case <-f.ctx.Done():
			return 0, io.EOF
		case <-f.r.node.clock.After(followPoll):
		}
	}
}

// readMore reads from the log after what has been read so far.
func (f *followReader) readMore(p []byte) (int, error) {
	if f.file == nil {
		file, err := os.Open(f.path)
		if os.IsNotExist(err) {
			return 0, io.EOF
		}
		if err != nil {
			return 0, err
		}
		f.file = file
	}
	n, err := f.file.ReadAt(p, f.offset)
	f.offset += int64(n)
	return n, err
}

// running reports whether the followed run of the container may still write.
func (f *followReader) running() bool {
	f.r.mu.Lock()
	defer f.r.mu.Unlock()
	return f.c.restarts == f.run && f.c.state.Terminated == nil && f.r.ctx.Err() == nil
}

func (f *followReader) close() error {
	if f.file != nil {
		return f.file.Close()
	}
	return nil
}
