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
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// envResolver resolves a container's environment as kubelet does: envFrom first, then
// env in order, each value expanding $(NAME) of the variables before it, valueFrom
// read from ConfigMaps, Secrets and the pod's fields. It reads ConfigMaps and Secrets
// from the API server directly, so that a just-created one is found.
type envResolver struct {
	client kubernetes.Interface
	pod    *corev1.Pod
	podIP  string
	hostIP string
}

// resolve returns the container's variables as a map, or the first error (a
// missing, non-optional ConfigMap, Secret or key, or an unsupported field).
func (r *envResolver) resolve(ctx context.Context, c *corev1.Container) (map[string]string, error) {
	env := map[string]string{}
	for _, from := range c.EnvFrom {
		if err := r.addFrom(ctx, env, from); err != nil {
			return nil, err
		}
	}
	for _, e := range c.Env {
		if e.ValueFrom == nil {
			env[e.Name] = expand(e.Value, env)
			continue
		}
		v, ok, err := r.valueFrom(ctx, e.ValueFrom)
		if err != nil {
			return nil, fmt.Errorf("env %s: %w", e.Name, err)
		}
		if ok {
			env[e.Name] = v
		}
	}
	return env, nil
}

// addFrom adds every key of an envFrom source, with its prefix.
func (r *envResolver) addFrom(ctx context.Context, env map[string]string, from corev1.EnvFromSource) error {
	var data map[string]string
	switch {
	case from.ConfigMapRef != nil:
		cm, err := r.configMap(ctx, from.ConfigMapRef.Name, from.ConfigMapRef.Optional)
		if err != nil || cm == nil {
			return err
		}
		data = cm.Data
	case from.SecretRef != nil:
		s, err := r.secret(ctx, from.SecretRef.Name, from.SecretRef.Optional)
		if err != nil || s == nil {
			return err
		}
		data = map[string]string{}
		for k, v := range s.Data {
			data[k] = string(v)
		}
	}
	for k, v := range data {
		env[from.Prefix+k] = v
	}
	return nil
}

// valueFrom reads one valueFrom source; ok is false for a missing optional one.
func (r *envResolver) valueFrom(ctx context.Context, src *corev1.EnvVarSource) (v string, ok bool, err error) {
	switch {
	case src.FieldRef != nil:
		v, err = r.field(src.FieldRef.FieldPath)
		return v, err == nil, err
	case src.ConfigMapKeyRef != nil:
		ref := src.ConfigMapKeyRef
		cm, err := r.configMap(ctx, ref.Name, ref.Optional)
		if err != nil || cm == nil {
			return "", false, err
		}
		return keyOf(cm.Data, ref.Key, "configmap", ref.Name, ref.Optional)
	case src.SecretKeyRef != nil:
		ref := src.SecretKeyRef
		s, err := r.secret(ctx, ref.Name, ref.Optional)
		if err != nil || s == nil {
			return "", false, err
		}
		data := map[string]string{}
		for k, b := range s.Data {
			data[k] = string(b)
		}
		return keyOf(data, ref.Key, "secret", ref.Name, ref.Optional)
	}
	return "", false, fmt.Errorf("unsupported valueFrom (the process node resolves fieldRef, configMapKeyRef and secretKeyRef)")
}

func keyOf(data map[string]string, key, kind, name string, optional *bool) (string, bool, error) {
	if v, ok := data[key]; ok {
		return v, true, nil
	}
	if optional != nil && *optional {
		return "", false, nil
	}
	return "", false, fmt.Errorf("key %q not found in %s %q", key, kind, name)
}

// field is the downward API value of a pod field path.
func (r *envResolver) field(fieldPath string) (string, error) {
	p := r.pod
	if k, ok := bracketKey(fieldPath, "metadata.labels"); ok {
		return p.Labels[k], nil
	}
	if k, ok := bracketKey(fieldPath, "metadata.annotations"); ok {
		return p.Annotations[k], nil
	}
	switch fieldPath {
	case "metadata.name":
		return p.Name, nil
	case "metadata.namespace":
		return p.Namespace, nil
	case "metadata.uid":
		return string(p.UID), nil
	case "spec.nodeName":
		return p.Spec.NodeName, nil
	case "spec.serviceAccountName":
		return p.Spec.ServiceAccountName, nil
	case "status.podIP", "status.podIPs":
		return r.podIP, nil
	case "status.hostIP", "status.hostIPs":
		return r.hostIP, nil
	}
	return "", fmt.Errorf("unsupported fieldRef %q", fieldPath)
}

// bracketKey parses prefix['key'].
func bracketKey(fieldPath, prefix string) (string, bool) {
	rest, ok := strings.CutPrefix(fieldPath, prefix+"['")
	if !ok || !strings.HasSuffix(rest, "']") {
		return "", false
	}
	return strings.TrimSuffix(rest, "']"), true
}

func (r *envResolver) configMap(ctx context.Context, name string, optional *bool) (*corev1.ConfigMap, error) {
	cm, err := r.client.CoreV1().ConfigMaps(r.pod.Namespace).Get(ctx, name, metav1.GetOptions{})
	return orOptional(cm, err, optional)
}

func (r *envResolver) secret(ctx context.Context, name string, optional *bool) (*corev1.Secret, error) {
	s, err := r.client.CoreV1().Secrets(r.pod.Namespace).Get(ctx, name, metav1.GetOptions{})
	return orOptional(s, err, optional)
}

// orOptional turns the NotFound error of an optional object into (nil, nil).
func orOptional[T any](obj *T, err error, optional *bool) (*T, error) {
	if err != nil && apierrors.IsNotFound(err) && optional != nil && *optional {
		return nil, nil
	}
	return obj, err
}

// expand replaces $(NAME) with NAME's value in env and "$$" with "$", as kubelet
// does; a reference to an unknown name stays as written.
func expand(s string, env map[string]string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch next := s[i+1]; {
		case next == '$':
			b.WriteByte('$')
			i++
		case next == '(':
			end := strings.IndexByte(s[i:], ')')
			v, ok := "", false
			if end > 0 {
				v, ok = env[s[i+2:i+end]]
			}
			if !ok {
				b.WriteByte('$')
				continue
			}
			b.WriteString(v)
			i += end
		default:
			b.WriteByte('$')
		}
	}
	return b.String()
}

// expandAll expands every element of ss (see expand).
func expandAll(ss []string, env map[string]string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = expand(s, env)
	}
	return out
}

// environ turns a map into a sorted KEY=VALUE list.
func environ(env map[string]string) []string {
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}
