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
	"path/filepath"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
)

// ServiceAccountMountPath is where a pod's service-account token, CA and namespace
// appear (under the pod's root), as on a node.
const ServiceAccountMountPath = "/var/run/secrets/kubernetes.io/serviceaccount"

// tokenExpiration is the lifetime asked for a pod's token. It is not refreshed: the
// local mode's jobs take minutes.
const tokenExpiration = 24 * 60 * 60

// apiEndpoint is how a pod reaches the API server: its URL and CA bundle (PEM).
type apiEndpoint struct {
	host   string
	caData []byte
}

// serviceAccount gives a pod its service-account credentials: a token from the
// TokenRequest API, bound to the pod, written with ca.crt and namespace under
// <pod dir>/serviceaccount, and a kubeconfig that uses them (client-go's in-cluster
// config reads a fixed path a process cannot have, so KUBECONFIG points to this
// file; ctrl.GetConfig and clientcmd find it there).
type serviceAccount struct {
	client kubernetes.Interface
	api    apiEndpoint
	pod    *corev1.Pod
	podDir string
}

// wantsToken reports whether the pod may get a token without looking at its service
// account: not when its automountServiceAccountToken is false, nor when a container
// already mounts something at ServiceAccountMountPath.
func (s *serviceAccount) wantsToken() bool {
	for _, c := range allContainers(s.pod) {
		for _, vm := range c.VolumeMounts {
			if filepath.Clean(vm.MountPath) == ServiceAccountMountPath {
				return false
			}
		}
	}
	return s.pod.Spec.AutomountServiceAccountToken == nil || *s.pod.Spec.AutomountServiceAccountToken
}

// automount reports whether the pod gets a token from its service account: the
// pod's automountServiceAccountToken, else the service account's, else true.
func (s *serviceAccount) automount(sa *corev1.ServiceAccount) bool {
	if s.pod.Spec.AutomountServiceAccountToken != nil {
		return *s.pod.Spec.AutomountServiceAccountToken
	}
	return sa.AutomountServiceAccountToken == nil || *sa.AutomountServiceAccountToken
}

// name is the pod's service account, defaulted.
func (s *serviceAccount) name() string {
	if s.pod.Spec.ServiceAccountName != "" {
		return s.pod.Spec.ServiceAccountName
	}
	return "default"
}

// make writes the credentials and returns the folder to mount at
// ServiceAccountMountPath and the kubeconfig's path, both "" when the pod gets no
// token. It fails when the service account does not exist.
func (s *serviceAccount) make(ctx context.Context, rootedTokenDir string) (dir, kubeconfig string, err error) {
	if !s.wantsToken() {
		return "", "", nil
	}
	sa, err := s.client.CoreV1().ServiceAccounts(s.pod.Namespace).Get(ctx, s.name(), metav1.GetOptions{})
	if err != nil {
		return "", "", fmt.Errorf("service account: %w", err)
	}
	if !s.automount(sa) {
		return "", "", nil
	}
	tr, err := s.client.CoreV1().ServiceAccounts(s.pod.Namespace).CreateToken(ctx, s.name(), &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{
			ExpirationSeconds: ptr.To[int64](tokenExpiration),
			BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: s.pod.Name, UID: s.pod.UID},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return "", "", fmt.Errorf("requesting a token for service account %q: %w", s.name(), err)
	}
	dir = filepath.Join(s.podDir, "serviceaccount")
	files := map[string][]byte{"token": []byte(tr.Status.Token), "ca.crt": s.api.caData, "namespace": []byte(s.pod.Namespace)}
	for name, b := range files {
		if err := writeFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return "", "", err
		}
	}
	kubeconfig = filepath.Join(s.podDir, "kubeconfig")
	return dir, kubeconfig, s.writeKubeconfig(kubeconfig, filepath.Join(rootedTokenDir, "token"))
}

// writeKubeconfig writes a kubeconfig that reaches the API server as the pod's
// service account (tokenFile, so that a refreshed token would be picked up), in the
// pod's namespace.
func (s *serviceAccount) writeKubeconfig(path, tokenFile string) error {
	const name = "pod"
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[name] = &clientcmdapi.Cluster{Server: s.api.host, CertificateAuthorityData: s.api.caData}
	cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{TokenFile: tokenFile}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name, Namespace: s.pod.Namespace}
	cfg.CurrentContext = name
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return err
	}
	return os.Chmod(path, 0o644)
}
