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
	"os"
	"path"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// ServiceAccountMountPath is where a pod's service-account token, CA and namespace
// appear (under the pod's root), as on a node: the ServiceAccount admission plugin
// mounts its token volume there in every container of a pod that automounts one.
const ServiceAccountMountPath = "/var/run/secrets/kubernetes.io/serviceaccount"

// apiEndpoint is how a pod reaches the API server: its URL and CA bundle (PEM).
type apiEndpoint struct {
	host   string
	caData []byte
}

// mountsServiceAccount reports whether a container of the pod mounts a volume at
// ServiceAccountMountPath: the token volume the ServiceAccount admission plugin adds,
// or one the pod brings.
func mountsServiceAccount(pod *corev1.Pod) bool {
	for _, c := range allContainers(pod) {
		for _, vm := range c.VolumeMounts {
			if path.Clean(vm.MountPath) == ServiceAccountMountPath {
				return true
			}
		}
	}
	return false
}

// writePodKubeconfig writes at path a kubeconfig that reaches the API server with the
// token and CA mounted at ServiceAccountMountPath (rootedDir, the folder a process
// of the pod reads it at), in the pod's namespace: what client-go's in-cluster
// config would read, but from a fixed path a process of the node cannot have, so
// KUBECONFIG points to this file instead (ctrl.GetConfig and clientcmd find it).
func writePodKubeconfig(path string, api apiEndpoint, namespace, rootedDir string) error {
	const name = "pod"
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[name] = &clientcmdapi.Cluster{Server: api.host, CertificateAuthority: filepath.Join(rootedDir, "ca.crt")}
	cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{TokenFile: filepath.Join(rootedDir, "token")}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name, Namespace: namespace}
	cfg.CurrentContext = name
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return err
	}
	return os.Chmod(path, 0o644)
}
