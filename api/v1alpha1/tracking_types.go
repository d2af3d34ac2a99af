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

package v1alpha1

// TrackingSpec names the experiment trackers that record the run, so that runs can
// be compared: its hyper-parameters and provenance, every step's losses, rewards,
// phase times and throughput, every evaluation. A tracker that is down or slow never
// stops the run: the trainer keeps what it could not send (bounded) and sends it
// when the tracker answers again, and the job's TrackingDegraded condition says so
// meanwhile.
// +kubebuilder:validation:XValidation:rule="has(self.mlflow) || has(self.tensorboard)",message="tracking names no tracker: set mlflow or tensorboard, or remove tracking"
type TrackingSpec struct {
	// MLflow records the run in an MLflow tracking server: one MLflow run per job,
	// continued by every restart and resume, its id in status.training.tracking.
	// +optional
	MLflow *MLflowTracking `json:"mlflow,omitempty"`

	// TensorBoard writes TensorBoard event files into spec.checkpoint's folder,
	// with the same names as MLflow's metrics; a restarted or resumed run adds a
	// file beside the earlier ones.
	// +optional
	TensorBoard *TensorBoardTracking `json:"tensorboard,omitempty"`
}

// MLflowRunNameVariables are the variables a run name template may hold.
var MLflowRunNameVariables = []string{"{namespace}", "{name}", "{uid}", "{algorithm}"}

// MLflowTracking is an MLflow tracking server and where in it the run goes.
type MLflowTracking struct {
	// TrackingURI is the tracking server's http:// or https:// URL, such as
	// http://mlflow.mlflow:5000, reachable from the trainer pod.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="self.matches('^https?://[^/?#]')",message="trackingURI must be the MLflow tracking server's http:// or https:// URL, such as http://mlflow.mlflow:5000: the trainer speaks MLflow's REST API, and other schemes (databricks, file, sqlite) are no server it can reach"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^[^:/?#]+://[^/?#]*@')",message="trackingURI must not hold credentials (user:password@host): the URI is copied into the run config, events and logs; put them in a Secret and name it in credentialsSecret"
	// +kubebuilder:validation:XValidation:rule="!self.matches('[^!-~]')",message="trackingURI has a space or a character outside printable ASCII, such as a letter of another script that looks like a Latin one: retype it in ASCII"
	TrackingURI string `json:"trackingURI"`

	// Experiment is the MLflow experiment the run goes into, created when missing.
	// Unset: the job's namespace.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=250
	Experiment string `json:"experiment,omitempty"`

	// RunName is the MLflow run's name, a template of {namespace}, {name} (the
	// job's), {uid} and {algorithm} (algorithm.name). Default "{name}".
	// +optional
	// +kubebuilder:default="{name}"
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=250
	// +kubebuilder:validation:XValidation:rule="self.replace('{namespace}', '').replace('{name}', '').replace('{uid}', '').replace('{algorithm}', '').matches('^[^{}]*$')",message="runName has a variable the trainer does not know, or a lone brace: use {namespace}, {name}, {uid} and {algorithm}"
	RunName string `json:"runName,omitempty"`

	// CredentialsSecret names a Secret in the job's namespace holding the tracking
	// server's credentials as MLflow's clients take them: the key "token" (sent as
	// "Authorization: Bearer <token>"), or the keys "username" and "password" (basic
	// authentication). They reach the trainer container only, as the environment
	// variables MLFLOW_TRACKING_TOKEN, MLFLOW_TRACKING_USERNAME and
	// MLFLOW_TRACKING_PASSWORD, taken from the Secret by the kubelet: the operator
	// never reads it. A Secret that is missing or holds neither is said in the
	// TrackingDegraded condition, naming this field. Unset: no credentials.
	// +optional
	CredentialsSecret *SecretReference `json:"credentialsSecret,omitempty"`
}

// SecretReference names a Secret in the job's namespace.
type SecretReference struct {
	// Name is the Secret's name.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Name string `json:"name"`
}

// TensorBoardTracking is where the trainer writes TensorBoard's event files.
type TensorBoardTracking struct {
	// Path is the folder of the event files inside spec.checkpoint's folder on its
	// claim: point TensorBoard's --logdir at it. Default "tensorboard".
	// +optional
	// +kubebuilder:default="tensorboard"
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('/') && !self.matches('(^|/)[.][.](/|$)')",message="path is a folder inside spec.checkpoint's folder: write it relative, without a leading '/' or '..'"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^step-[0-9]+(/|$)')",message="path must not be a folder the checkpoints take (step-<n>): choose another name, such as tensorboard"
	Path string `json:"path,omitempty"`
}

// TrackingStatus is how the run's experiment trackers are doing.
type TrackingStatus struct {
	// MLflowRunID is the id of the job's MLflow run, once the trainer found or
	// started it.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	MLflowRunID string `json:"mlflowRunID,omitempty"`

	// Degraded says why a tracker does not record the run now, naming the spec
	// field to fix when one can (a refused credential, a URI that answers as no
	// tracker) or the tracker that does not answer; empty while every tracker
	// records. The controller shows it in the TrackingDegraded condition.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Degraded string `json:"degraded,omitempty"`

	// Pending is the number of metric values measured but not yet recorded by every
	// tracker; Dropped the number dropped because a tracker was away longer than the
	// trainer keeps values for (the oldest go first).
	// +optional
	Pending int64 `json:"pending,omitempty"`
	// +optional
	Dropped int64 `json:"dropped,omitempty"`
}
