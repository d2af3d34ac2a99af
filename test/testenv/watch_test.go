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
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// endingWatches is an API client whose List answers at resourceVersion 10 and whose
// watches the test drives: each Watch records the resourceVersion it starts from and
// hands out the next of its fake watchers.
type endingWatches struct {
	client.WithWatch
	watchers chan *watch.FakeWatcher
	mu       sync.Mutex
	from     []string
}

func (c *endingWatches) List(_ context.Context, list client.ObjectList, _ ...client.ListOption) error {
	list.SetResourceVersion("10")
	return nil
}

func (c *endingWatches) Watch(_ context.Context, _ client.ObjectList, opts ...client.ListOption) (watch.Interface, error) {
	o := (&client.ListOptions{}).ApplyOptions(opts)
	c.mu.Lock()
	c.from = append(c.from, o.Raw.ResourceVersion)
	c.mu.Unlock()
	return <-c.watchers, nil
}

func (c *endingWatches) startedFrom() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.from...)
}

func podAt(name, resourceVersion string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", ResourceVersion: resourceVersion}}
}

// TestWatchFromNowResumesAnEndedWatch ends the first watch after one pod, as the API
// server ends the watch of a reader that falls behind, and checks that the pod
// created after it still arrives, from a watch resumed at the last version seen.
func TestWatchFromNowResumesAnEndedWatch(t *testing.T) {
	first, second := watch.NewFake(), watch.NewFake()
	c := &endingWatches{watchers: make(chan *watch.FakeWatcher, 2)}
	c.watchers <- first
	c.watchers <- second
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w, err := WatchFromNow(ctx, c, &corev1.PodList{}, "ns")
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	go func() { first.Add(podAt("a", "11")); first.Stop() }()
	expectAdded(t, w, "a")
	go second.Add(podAt("b", "12"))
	expectAdded(t, w, "b")
	if got := c.startedFrom(); len(got) != 2 || got[0] != "10" || got[1] != "11" {
		t.Errorf("the watches started from resourceVersions %q, want [10 11]: the list's, then the last pod's", got)
	}
}

// expectAdded fails the test unless w's next event is the addition of the pod name.
func expectAdded(t *testing.T, w watch.Interface, name string) {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		if !ok {
			t.Fatalf("the watch ended before pod %s", name)
		}
		if p, isPod := ev.Object.(*corev1.Pod); ev.Type != watch.Added || !isPod || p.Name != name {
			t.Fatalf("got a %s event of %v, want pod %s added", ev.Type, ev.Object, name)
		}
	case <-time.After(time.Minute):
		t.Fatalf("no event of pod %s within a minute", name)
	}
}
