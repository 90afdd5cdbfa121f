{{/* The app.kubernetes.io/name of every object (as in deploy/dashboard). */}}
{{- define "kubectl-drift.name" -}}
{{- default "kubectl-drift-dashboard" .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Namespaced objects' name: <release>-dashboard when the release name holds "kubectl-drift" (so
release kubectl-drift gives deploy/dashboard's kubectl-drift-dashboard), else
<release>-kubectl-drift-dashboard.
*/}}
{{- define "kubectl-drift.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else if contains "kubectl-drift-dashboard" .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else if contains "kubectl-drift" .Release.Name }}
{{- printf "%s-dashboard" .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-kubectl-drift-dashboard" .Release.Name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}

{{/*
Cluster-scoped objects' name prefix: the fullname and the release namespace, so installs in
several namespaces (or several releases) never share a ClusterRole or a policy.
*/}}
{{- define "kubectl-drift.clusterPrefix" -}}
{{- printf "%s-%s" (include "kubectl-drift.fullname" .) .Release.Namespace }}
{{- end }}

{{- define "kubectl-drift.selectorLabels" -}}
app.kubernetes.io/name: {{ include "kubectl-drift.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "kubectl-drift.labels" -}}
{{ include "kubectl-drift.selectorLabels" . }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/*
serve's --config: the config value, with serve.authorization.namespace set to the release
namespace under --auth kubernetes when serve's default (the -n namespace, else kubectl-drift) is
another, so the Role this chart creates is the one checked.
*/}}
{{- define "kubectl-drift.config" -}}
{{- $config := deepCopy .Values.config }}
{{- if .Values.auth.enabled }}
{{- $default := default "kubectl-drift" .Values.serve.namespace }}
{{- if ne $default .Release.Namespace }}
{{- $serve := default dict (get $config "serve") }}
{{- $authz := default dict (get $serve "authorization") }}
{{- if not (hasKey $authz "namespace") }}
{{- $_ := set $authz "namespace" .Release.Namespace }}
{{- end }}
{{- $_ := set $serve "authorization" $authz }}
{{- $_ := set $config "serve" $serve }}
{{- end }}
{{- end }}
{{- if $config }}
{{- toYaml $config }}
{{- end }}
{{- end }}

{{- define "kubectl-drift.dataClaim" -}}
{{- default (printf "%s-data" (include "kubectl-drift.fullname" .)) .Values.persistence.existingClaim }}
{{- end }}
