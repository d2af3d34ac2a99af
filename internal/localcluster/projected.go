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
	"fmt"
	"os"
	"sort"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// defaultTokenExpiration is the lifetime of a projected token whose source names
// none (the API server defaults the field, so only a hand-made pod lacks it).
const defaultTokenExpiration = 60 * 60

// projected writes a projected volume's sources into dir, as kubelet does:
//
//	serviceAccountToken  a token from the TokenRequest API for the pod's service
//	                     account, bound to the pod, with the source's audience and
//	                     expiration, at its path
//	configMap, secret    one file per key (or item)
//	downwardAPI          one file per item (see downwardAPI)
//
// This is how the token volume the ServiceAccount admission plugin adds to a pod
// (kube-api-access-*: token, the kube-root-ca.crt ConfigMap's ca.crt, the namespace)
// reaches it. Tokens are written once, not refreshed as kubelet does at 80 % of their
// lifetime: the admission plugin asks for 3607 seconds, which the API server extends
// to a year, longer than any local run. Other sources are refused.
func (m *volumeMaker) projected(ctx context.Context, dir string, src *corev1.ProjectedVolumeSource) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for i, s := range src.Sources {
		if err := m.projectOne(ctx, dir, s, src.DefaultMode); err != nil {
			return fmt.Errorf("sources[%d]: %w", i, err)
		}
	}
	return nil
}

func (m *volumeMaker) projectOne(ctx context.Context, dir string, s corev1.VolumeProjection, mode *int32) error {
	switch {
	case s.ServiceAccountToken != nil:
		return m.serviceAccountToken(ctx, dir, s.ServiceAccountToken, mode)
	case s.ConfigMap != nil:
		data, err := m.configMapData(ctx, s.ConfigMap.Name, s.ConfigMap.Optional)
		if err != nil || data == nil {
			return err
		}
		return writeKeys(dir, data, s.ConfigMap.Items, mode)
	case s.Secret != nil:
		data, err := m.secretData(ctx, s.Secret.Name, s.Secret.Optional)
		if err != nil || data == nil {
			return err
		}
		return writeKeys(dir, data, s.Secret.Items, mode)
	case s.DownwardAPI != nil:
		return m.downwardAPI(dir, s.DownwardAPI.Items, mode)
	}
	return fmt.Errorf("unsupported projection (the process node projects serviceAccountToken, configMap, secret and downwardAPI)")
}

// serviceAccountToken requests a token for the pod's service account, bound to the
// pod, and writes it at the source's path.
func (m *volumeMaker) serviceAccountToken(ctx context.Context, dir string, src *corev1.ServiceAccountTokenProjection, mode *int32) error {
	sa := m.pod.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: ptr.To[int64](defaultTokenExpiration),
		BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: m.pod.Name, UID: m.pod.UID},
	}}
	if src.ExpirationSeconds != nil {
		req.Spec.ExpirationSeconds = src.ExpirationSeconds
	}
	if src.Audience != "" {
		req.Spec.Audiences = []string{src.Audience}
	}
	tr, err := m.client.CoreV1().ServiceAccounts(m.pod.Namespace).CreateToken(ctx, sa, req, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("requesting a token for service account %q: %w", sa, err)
	}
	return writeKeys(dir, map[string][]byte{"token": []byte(tr.Status.Token)}, []corev1.KeyToPath{{Key: "token", Path: src.Path}}, mode)
}

// downwardAPI writes each item's pod field at its path: metadata.name, .namespace,
// .uid, a label or annotation (metadata.labels['k']), or all of them (one k="v" line
// each, sorted, as kubelet writes them). resourceFieldRef is refused.
func (m *volumeMaker) downwardAPI(dir string, items []corev1.DownwardAPIVolumeFile, mode *int32) error {
	data := map[string][]byte{}
	paths := make([]corev1.KeyToPath, 0, len(items))
	for _, it := range items {
		if it.FieldRef == nil {
			return fmt.Errorf("downward API item %q: only fieldRef is supported on the process node", it.Path)
		}
		v, err := podField(m.pod, it.FieldRef.FieldPath)
		if err != nil {
			return fmt.Errorf("downward API item %q: %w", it.Path, err)
		}
		data[it.Path] = []byte(v)
		paths = append(paths, corev1.KeyToPath{Key: it.Path, Path: it.Path, Mode: it.Mode})
	}
	return writeKeys(dir, data, paths, mode)
}

// podField is a metadata field of the pod as the downward API volume writes it.
func podField(pod *corev1.Pod, fieldPath string) (string, error) {
	switch fieldPath {
	case "metadata.labels":
		return formatMap(pod.Labels), nil
	case "metadata.annotations":
		return formatMap(pod.Annotations), nil
	}
	if !strings.HasPrefix(fieldPath, "metadata.") {
		return "", fmt.Errorf("unsupported fieldRef %q (a downward API volume has metadata fields only)", fieldPath)
	}
	return (&envResolver{pod: pod}).field(fieldPath)
}

// formatMap writes a map as sorted key="value" lines, values quoted as Go does.
func formatMap(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	lines := make([]string, len(keys))
	for i, k := range keys {
		lines[i] = fmt.Sprintf("%s=%q", k, m[k])
	}
	return strings.Join(lines, "\n")
}
