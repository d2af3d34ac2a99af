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

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// WatchFromNow watches the changes, from now on, to the objects of list's kind in
// namespace ns, until ctx ends or the watch is stopped. Where the API server ends
// the watch (as it ends one whose reader falls behind, on a loaded machine), it is
// resumed from the last version seen, so no change is lost: a plain watch's result
// channel would close and the changes after it would go unseen. The objects that
// exist already are not reported; list is filled with them.
func WatchFromNow(ctx context.Context, c client.WithWatch, list client.ObjectList, ns string) (watch.Interface, error) {
	if err := c.List(ctx, list, client.InNamespace(ns)); err != nil {
		return nil, fmt.Errorf("listing to watch from: %w", err)
	}
	lw := &cache.ListWatch{WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
		return c.Watch(ctx, list.DeepCopyObject().(client.ObjectList), client.InNamespace(ns), &client.ListOptions{Raw: &opts})
	}}
	return watchtools.NewRetryWatcherWithContext(ctx, list.GetResourceVersion(), lw)
}
