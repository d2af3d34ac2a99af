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
	"path"
	"path/filepath"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// volumeMaker materialises a pod's volumes as folders on this machine:
//
//	emptyDir               <pod dir>/volumes/<volume>
//	configMap, secret      <pod dir>/volumes/<volume>, one file per key (or item)
//	downwardAPI            <pod dir>/volumes/<volume>, one file per item
//	projected              <pod dir>/volumes/<volume>, the files of each source
//	                       (see projected)
//	persistentVolumeClaim  <state dir>/pvc/<namespace>/<claim>; the claim must exist
//	hostPath               the path itself
//
// ConfigMap data (text; binaryData is left alone) has its absolute paths rewritten
// like the command line (see pathRewriter). Other volume types are refused.
type volumeMaker struct {
	client   kubernetes.Interface
	stateDir string
	pod      *corev1.Pod
	podDir   string
	rewrite  *pathRewriter
}

// make materialises every volume of the pod and returns volume name -> folder.
func (m *volumeMaker) make(ctx context.Context) (map[string]string, error) {
	dirs := map[string]string{}
	for i := range m.pod.Spec.Volumes {
		v := &m.pod.Spec.Volumes[i]
		dir, err := m.makeOne(ctx, v)
		if err != nil {
			return nil, fmt.Errorf("volume %q: %w", v.Name, err)
		}
		dirs[v.Name] = dir
	}
	return dirs, nil
}

func (m *volumeMaker) makeOne(ctx context.Context, v *corev1.Volume) (string, error) {
	dir := filepath.Join(m.podDir, "volumes", v.Name)
	switch {
	case v.EmptyDir != nil:
		return dir, os.MkdirAll(dir, 0o777)
	case v.ConfigMap != nil:
		return dir, m.configMap(ctx, dir, v.ConfigMap)
	case v.Secret != nil:
		return dir, m.secret(ctx, dir, v.Secret)
	case v.PersistentVolumeClaim != nil:
		return m.claim(ctx, v.PersistentVolumeClaim.ClaimName)
	case v.HostPath != nil:
		return v.HostPath.Path, nil
	case v.Projected != nil:
		return dir, m.projected(ctx, dir, v.Projected)
	case v.DownwardAPI != nil:
		return dir, m.downwardAPI(dir, v.DownwardAPI.Items, v.DownwardAPI.DefaultMode)
	}
	return "", fmt.Errorf("unsupported volume type (the process node supports emptyDir, configMap, secret, projected, downwardAPI, persistentVolumeClaim and hostPath)")
}

// ClaimDir is the folder that stands for a PersistentVolumeClaim on a process node
// whose state folder is stateDir.
func ClaimDir(stateDir, namespace, claim string) string {
	return filepath.Join(stateDir, "pvc", namespace, claim)
}

// claim checks that the PersistentVolumeClaim exists and returns its folder.
func (m *volumeMaker) claim(ctx context.Context, name string) (string, error) {
	if _, err := m.client.CoreV1().PersistentVolumeClaims(m.pod.Namespace).Get(ctx, name, metav1.GetOptions{}); err != nil {
		return "", err
	}
	dir := ClaimDir(m.stateDir, m.pod.Namespace, name)
	return dir, os.MkdirAll(dir, 0o777)
}

func (m *volumeMaker) configMap(ctx context.Context, dir string, src *corev1.ConfigMapVolumeSource) error {
	data, err := m.configMapData(ctx, src.Name, src.Optional)
	if err != nil {
		return err
	}
	return writeKeys(dir, data, src.Items, src.DefaultMode)
}

// configMapData is the ConfigMap's data (paths rewritten) and binary data, nil for
// a missing optional one.
func (m *volumeMaker) configMapData(ctx context.Context, name string, optional *bool) (map[string][]byte, error) {
	cm, err := m.client.CoreV1().ConfigMaps(m.pod.Namespace).Get(ctx, name, metav1.GetOptions{})
	if cm, err = orOptional(cm, err, optional); err != nil || cm == nil {
		return nil, err
	}
	data := map[string][]byte{}
	for k, v := range cm.Data {
		data[k] = []byte(m.rewrite.String(v))
	}
	for k, v := range cm.BinaryData {
		data[k] = v
	}
	return data, nil
}

func (m *volumeMaker) secret(ctx context.Context, dir string, src *corev1.SecretVolumeSource) error {
	data, err := m.secretData(ctx, src.SecretName, src.Optional)
	if err != nil {
		return err
	}
	return writeKeys(dir, data, src.Items, src.DefaultMode)
}

// secretData is the Secret's data, nil for a missing optional one.
func (m *volumeMaker) secretData(ctx context.Context, name string, optional *bool) (map[string][]byte, error) {
	s, err := m.client.CoreV1().Secrets(m.pod.Namespace).Get(ctx, name, metav1.GetOptions{})
	if s, err = orOptional(s, err, optional); err != nil || s == nil {
		return nil, err
	}
	return s.Data, nil
}

// writeKeys writes each key of data as a file of dir (or, with items, only those
// keys at their paths), with the given mode (default 0644).
func writeKeys(dir string, data map[string][]byte, items []corev1.KeyToPath, defaultMode *int32) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	mode := os.FileMode(0o644)
	if defaultMode != nil {
		mode = os.FileMode(*defaultMode)
	}
	if len(items) == 0 {
		keys := make([]string, 0, len(data))
		for k := range data {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			items = append(items, corev1.KeyToPath{Key: k, Path: k})
		}
	}
	for _, it := range items {
		b, ok := data[it.Key]
		if !ok {
			return fmt.Errorf("key %q not found", it.Key)
		}
		fileMode := mode
		if it.Mode != nil {
			fileMode = os.FileMode(*it.Mode)
		}
		if err := writeFile(filepath.Join(dir, filepath.FromSlash(it.Path)), b, fileMode); err != nil {
			return err
		}
	}
	return nil
}

func writeFile(path string, b []byte, mode os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(path, b, mode|0o200); err != nil {
		return err
	}
	return os.Chmod(path, mode)
}

// mountAll exposes each volume mount of the pod's containers at root+mountPath as a
// symbolic link to the volume's folder (or to subPath inside it). Shorter mount paths
// are linked first, so a nested mount lands inside its parent's volume, as on a node.
// Two containers may mount the same volume at the same path; different volumes at
// one path are refused.
func mountAll(root string, pod *corev1.Pod, volumeDirs map[string]string) error {
	targets := map[string]string{}
	for _, c := range allContainers(pod) {
		for _, vm := range c.VolumeMounts {
			src, ok := volumeDirs[vm.Name]
			if !ok {
				return fmt.Errorf("container %q mounts unknown volume %q", c.Name, vm.Name)
			}
			if vm.SubPath != "" {
				src = filepath.Join(src, filepath.FromSlash(vm.SubPath))
			}
			p := path.Clean(vm.MountPath)
			if prev, ok := targets[p]; ok && prev != src {
				return fmt.Errorf("mount path %s: two different volumes; the process node has one file tree per pod", p)
			}
			targets[p] = src
		}
	}
	paths := make([]string, 0, len(targets))
	for p := range targets {
		paths = append(paths, p)
	}
	sort.Slice(paths, func(i, j int) bool { return strings.Count(paths[i], "/") < strings.Count(paths[j], "/") })
	for _, p := range paths {
		if err := link(targets[p], filepath.Join(root, filepath.FromSlash(p))); err != nil {
			return err
		}
	}
	return nil
}

// link makes at a symbolic link to target, creating at's parent folders; an
// existing link to the same target is kept.
func link(target, at string) error {
	if cur, err := os.Readlink(at); err == nil && cur == target {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(at), 0o755); err != nil {
		return err
	}
	_ = os.Remove(at)
	return os.Symlink(target, at)
}

// allContainers lists the pod's init containers and containers.
func allContainers(pod *corev1.Pod) []*corev1.Container {
	var cs []*corev1.Container
	for i := range pod.Spec.InitContainers {
		cs = append(cs, &pod.Spec.InitContainers[i])
	}
	for i := range pod.Spec.Containers {
		cs = append(cs, &pod.Spec.Containers[i])
	}
	return cs
}

// mountPaths are every mount path of the pod's containers: the paths the pod's
// rewriter roots.
func mountPaths(pod *corev1.Pod) []string {
	var ps []string
	for _, c := range allContainers(pod) {
		for _, vm := range c.VolumeMounts {
			ps = append(ps, vm.MountPath)
		}
	}
	return ps
}

// terminationMessagePath is the container's termination message path, defaulted.
func terminationMessagePath(c *corev1.Container) string {
	if c.TerminationMessagePath != "" {
		return c.TerminationMessagePath
	}
	return corev1.TerminationMessagePathDefault
}
