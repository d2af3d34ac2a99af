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
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/typed/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
)

// crdServedTimeout bounds "up"'s wait, after it applied the CRDs, until the API
// server serves their resources (see waitForCRDsServed).
const crdServedTimeout = 60 * time.Second

// installCRDs applies the CRDs of l.CRDDir and waits until the API server serves
// them (waitForCRDsServed): what follows in "up" (the sample job, the manager's
// watches) and what the user runs once "up" has returned (kubectl) use them at once.
func (l *Local) installCRDs(ctx context.Context) error {
	out, err := l.kubectl(ctx, "apply", "--server-side", "-f", l.CRDDir, "-o", "name")
	if err != nil {
		return fmt.Errorf("installing the CRDs: %w", err)
	}
	names := appliedCRDs(out)
	if len(names) == 0 {
		return fmt.Errorf("installing the CRDs: %s holds no CustomResourceDefinition", l.CRDDir)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", l.path(fileKubeconfig))
	if err != nil {
		return err
	}
	w, err := newCRDWaiter(cfg)
	if err != nil {
		return err
	}
	return l.waitForCRDsServed(ctx, w, names)
}

// crdResourcePrefix is how "kubectl apply -o name" names a CRD.
const crdResourcePrefix = "customresourcedefinition.apiextensions.k8s.io/"

// appliedCRDs is the names of the CRDs in the output of "kubectl apply -o name"
// (one "<resource>/<name>" a line), other objects left out.
func appliedCRDs(out string) []string {
	var names []string
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) > 0 {
			if name, ok := strings.CutPrefix(f[0], crdResourcePrefix); ok {
				names = append(names, name)
			}
		}
	}
	return names
}

// crdWaiter reads what waitForCRDsServed waits on: the CRDs, and the API server's
// discovery, read afresh (not from a cache) each time.
type crdWaiter struct {
	crds      apiextensionsclient.CustomResourceDefinitionInterface
	discovery discovery.DiscoveryInterface
}

func newCRDWaiter(cfg *rest.Config) (*crdWaiter, error) {
	c, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	d, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &crdWaiter{crds: c.CustomResourceDefinitions(), discovery: d}, nil
}

// waitForCRDsServed waits, at most crdServedTimeout, until every CRD named is
// Established and each of its served versions is in the API server's discovery
// (what kubectl and the manager map a kind to a resource with): a CRD's Established
// condition is written before the API server's discovery controller adds the
// resource, so a client that only waits for the condition may still be told "no
// matches for kind" when it creates an object of the kind right after.
func (l *Local) waitForCRDsServed(ctx context.Context, w *crdWaiter, names []string) error {
	var pending []string
	err := l.waitFor(ctx, crdServedTimeout, func() (bool, error) {
		var err error
		pending, err = w.notServed(ctx, names)
		return len(pending) == 0, err
	})
	if errors.Is(err, errTimedOut) {
		return fmt.Errorf("the API server did not serve the CRDs within %s: %s (see kubectl describe crd)",
			crdServedTimeout, strings.Join(pending, "; "))
	}
	return err
}

// notServed is why each CRD named that is not served yet is not (crdNotServed);
// none: all are.
func (w *crdWaiter) notServed(ctx context.Context, names []string) ([]string, error) {
	var crds []*apiextensionsv1.CustomResourceDefinition
	var pending []string
	for _, name := range names {
		crd, err := w.crds.Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			pending = append(pending, name+": not found")
		case err != nil:
			return nil, fmt.Errorf("reading the CRD %s: %w", name, err)
		default:
			crds = append(crds, crd)
		}
	}
	mapper, err := discoveryMapper(ctx, w.discovery)
	if err != nil {
		return nil, err
	}
	for _, crd := range crds {
		if why := crdNotServed(crd, mapper); why != "" {
			pending = append(pending, crd.Name+": "+why)
		}
	}
	return pending, nil
}

// discoveryMapper is a RESTMapper of the API server's discovery as it is now. A group
// whose discovery failed is left out (its kinds wait), as kubectl would miss it too.
func discoveryMapper(ctx context.Context, d discovery.DiscoveryInterface) (meta.RESTMapper, error) {
	groups, err := restmapper.GetAPIGroupResourcesWithContext(ctx, discovery.ToDiscoveryInterfaceWithContext(d))
	if err != nil && !discovery.IsGroupDiscoveryFailedError(err) {
		return nil, fmt.Errorf("reading the API server's discovery: %w", err)
	}
	return restmapper.NewDiscoveryRESTMapper(groups), nil
}

// crdNotServed is why clients cannot use the CRD yet, "" when they can: it is
// Established, and mapper (the API server's discovery) maps its kind, in each served
// version, to its resource.
func crdNotServed(crd *apiextensionsv1.CustomResourceDefinition, mapper meta.RESTMapper) string {
	if why := notEstablished(crd); why != "" {
		return why
	}
	gk := schema.GroupKind{Group: crd.Spec.Group, Kind: crd.Spec.Names.Kind}
	var missing []string
	for _, v := range crd.Spec.Versions {
		if !v.Served {
			continue
		}
		m, err := mapper.RESTMapping(gk, v.Name)
		if err != nil || m.Resource.Resource != crd.Spec.Names.Plural {
			missing = append(missing, gk.WithVersion(v.Name).String())
		}
	}
	if len(missing) > 0 {
		return fmt.Sprintf("Established, but the API server's discovery does not serve %s yet", strings.Join(missing, ", "))
	}
	return ""
}

// notEstablished is why the CRD is not Established, "" when it is. A CRD whose
// status has no conditions yet (the API server writes them after the CRD is
// created) is not.
func notEstablished(crd *apiextensionsv1.CustomResourceDefinition) string {
	for _, c := range crd.Status.Conditions {
		if c.Type != apiextensionsv1.Established {
			continue
		}
		if c.Status == apiextensionsv1.ConditionTrue {
			return ""
		}
		return fmt.Sprintf("not Established (%s: %s)", c.Reason, c.Message)
	}
	return "not Established yet (no condition)"
}
