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

package controllers

import ctrl "sigs.k8s.io/controller-runtime"

// LeaderElectionID names the Lease that the managers of one cluster elect their
// leader with.
const LeaderElectionID = "espo-operator.training.espo.dev"

// ElectLeader turns on leader election in o, with the Lease LeaderElectionID in
// namespace (empty: the manager's own, in a pod). A leader that stops releases the
// Lease, so that a standby leads at once (on a rolling update, say), not after the
// Lease's 15 s have run out. That is safe only because the process ends when its
// manager stops, as "espo manager" does; a manager killed releases nothing, and its
// Lease runs out.
func ElectLeader(o *ctrl.Options, namespace string) {
	o.LeaderElection = true
	o.LeaderElectionID = LeaderElectionID
	o.LeaderElectionNamespace = namespace
	o.LeaderElectionReleaseOnCancel = true
}
