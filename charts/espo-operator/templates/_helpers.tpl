{{/* The prefix of every object's name: the release name, or fullnameOverride. */}}
{{- define "espo-operator.fullname" -}}
{{- default .Release.Name .Values.fullnameOverride | trunc 40 | trimSuffix "-" -}}
{{- end -}}

{{/* Labels of every object. */}}
{{- define "espo-operator.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/part-of: espo-operator
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{ include "espo-operator.selectorLabels" . }}
{{- end -}}

{{/* Labels that select the manager's pods. */}}
{{- define "espo-operator.selectorLabels" -}}
app.kubernetes.io/name: espo-operator
app.kubernetes.io/instance: {{ .Release.Name }}
control-plane: controller-manager
{{- end -}}

{{/* The manager's service account. */}}
{{- define "espo-operator.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (printf "%s-manager" (include "espo-operator.fullname" .)) .Values.serviceAccount.name -}}
{{- else -}}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* The operator's image. */}}
{{- define "espo-operator.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{/* The namespace of the leader election Lease. */}}
{{- define "espo-operator.leaderElectionNamespace" -}}
{{- default .Release.Namespace .Values.leaderElection.namespace -}}
{{- end -}}
