{{/* Chart name, or nameOverride. */}}
{{- define "model-delivery.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Full resource name: release-chart, unless the release name already contains the chart name. */}}
{{- define "model-delivery.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "model-delivery.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "model-delivery.selectorLabels" -}}
app.kubernetes.io/name: {{ include "model-delivery.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "model-delivery.labels" -}}
helm.sh/chart: {{ include "model-delivery.chart" . }}
{{ include "model-delivery.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: gpufleet
{{- end }}

{{- define "model-delivery.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "model-delivery.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* registry/repository:tag, each part falling back to global.image and the appVersion. */}}
{{- define "model-delivery.image" -}}
{{- $registry := .Values.image.registry | default .Values.global.image.registry -}}
{{- $tag := .Values.image.tag | default .Values.global.image.tag | default .Chart.AppVersion -}}
{{- if $registry -}}
{{- printf "%s/%s:%s" (trimSuffix "/" $registry) .Values.image.repository $tag -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository $tag -}}
{{- end -}}
{{- end }}

{{- define "model-delivery.pullPolicy" -}}
{{- .Values.image.pullPolicy | default .Values.global.image.pullPolicy | default "IfNotPresent" -}}
{{- end }}

{{- define "model-delivery.imagePullSecrets" -}}
{{- $secrets := concat (.Values.global.image.pullSecrets | default list) (.Values.imagePullSecrets | default list) | uniq -}}
{{- if $secrets }}
imagePullSecrets:
{{- range $secrets }}
  - name: {{ . }}
{{- end }}
{{- end }}
{{- end }}

{{- define "model-delivery.grpcTlsSecret" -}}
{{- .Values.grpcTls.secretName | default .Values.global.grpcTls.secretName -}}
{{- end }}

{{/*
The NATS credentials of this component: its own natsAuth when that names a Secret, else
global.nats.auth. Each component should have its own identity with only the permissions it needs
(docs/security.md#nats-identities-and-permissions).
*/}}
{{- define "model-delivery.natsAuth" -}}
{{- $own := .Values.natsAuth | default dict -}}
{{- if $own.secretName }}{{ toYaml $own }}{{ else }}{{ toYaml .Values.global.nats.auth }}{{ end -}}
{{- end }}

{{/*
Environment every gpufleet service reads (libs/config sharedConfigFields), from the global
values. Files (NATS creds/seed, TLS material) are mounted by "model-delivery.sharedVolumes".
*/}}
{{- define "model-delivery.sharedEnv" -}}
{{- $g := .Values.global -}}
{{- $auth := include "model-delivery.natsAuth" . | fromYaml -}}
- name: POD_NAME
  valueFrom:
    fieldRef:
      fieldPath: metadata.name
- name: POD_NAMESPACE
  valueFrom:
    fieldRef:
      fieldPath: metadata.namespace
- name: K8S_NODE_NAME
  valueFrom:
    fieldRef:
      fieldPath: spec.nodeName
- name: GPUFLEET_CLUSTER
  value: {{ $g.cluster | quote }}
- name: NATS_URL
  value: {{ $g.nats.url | quote }}
- name: LOG_LEVEL
  value: {{ .Values.logLevel | default $g.logLevel | quote }}
{{- with $auth }}
{{- if .secretName }}
{{- if .credsKey }}
- name: NATS_CREDS_FILE
  value: {{ printf "/etc/gpufleet/nats-auth/%s" .credsKey | quote }}
{{- end }}
{{- if .nkeySeedKey }}
- name: NATS_NKEY_SEED_FILE
  value: {{ printf "/etc/gpufleet/nats-auth/%s" .nkeySeedKey | quote }}
{{- end }}
{{- if .userKey }}
- name: NATS_USER
  valueFrom:
    secretKeyRef:
      name: {{ .secretName | quote }}
      key: {{ .userKey | quote }}
{{- end }}
{{- if .passwordKey }}
- name: NATS_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ .secretName | quote }}
      key: {{ .passwordKey | quote }}
{{- end }}
{{- if .tokenKey }}
- name: NATS_TOKEN
  valueFrom:
    secretKeyRef:
      name: {{ .secretName | quote }}
      key: {{ .tokenKey | quote }}
{{- end }}
{{- end }}
{{- end }}
{{- with $g.nats.tls }}
{{- if .secretName }}
{{- if .caKey }}
- name: NATS_TLS_CA_FILE
  value: {{ printf "/etc/gpufleet/nats-tls/%s" .caKey | quote }}
{{- end }}
{{- if and .certKey .keyKey }}
- name: NATS_TLS_CERT_FILE
  value: {{ printf "/etc/gpufleet/nats-tls/%s" .certKey | quote }}
- name: NATS_TLS_KEY_FILE
  value: {{ printf "/etc/gpufleet/nats-tls/%s" .keyKey | quote }}
{{- end }}
{{- end }}
{{- end }}
{{- if include "model-delivery.grpcTlsSecret" . }}
- name: GRPC_TLS_CERT_FILE
  value: /etc/gpufleet/grpc-tls/tls.crt
- name: GRPC_TLS_KEY_FILE
  value: /etc/gpufleet/grpc-tls/tls.key
{{- if $g.grpcTls.mutual }}
- name: GRPC_TLS_CA_FILE
  value: /etc/gpufleet/grpc-tls/ca.crt
{{- end }}
{{- end }}
{{- /* The admin token: global.adminToken.secretName, else the Secret the parent chart generates (<release>-admin-token). */}}
{{- $adminSecret := $g.adminToken.secretName | default (ternary (printf "%s-admin-token" .Release.Name) "" (eq (toString $g.adminToken.generate) "true")) }}
{{- if $adminSecret }}
- name: GPUFLEET_ADMIN_TOKEN
  valueFrom:
    secretKeyRef:
      name: {{ $adminSecret | quote }}
      key: {{ ternary ($g.adminToken.key | default "token") "token" (ne $g.adminToken.secretName "") | quote }}
{{- end }}
{{- if $g.otel.endpoint }}
- name: OTEL_EXPORTER_OTLP_ENDPOINT
  value: {{ $g.otel.endpoint | quote }}
{{- end }}
- name: OTEL_SERVICE_NAME
  value: {{ .Values.otelServiceName | default (printf "gpufleet-%s" .Chart.Name) | quote }}
- name: OTEL_RESOURCE_ATTRIBUTES
  value: {{ printf "k8s.pod.name=$(POD_NAME),k8s.namespace.name=$(POD_NAMESPACE),k8s.node.name=$(K8S_NODE_NAME),gpufleet.cluster=%s" $g.cluster | quote }}
{{- end }}

{{/* Volumes for the files named in "model-delivery.sharedEnv" (secrets: readable by the pod's group only). */}}
{{- define "model-delivery.sharedVolumes" -}}
{{- $g := .Values.global -}}
{{- $auth := include "model-delivery.natsAuth" . | fromYaml -}}
{{- with $auth }}
{{- if and .secretName (or .credsKey .nkeySeedKey) }}
- name: nats-auth
  secret:
    secretName: {{ .secretName | quote }}
    defaultMode: 0440
    items:
      {{- if .credsKey }}
      - key: {{ .credsKey | quote }}
        path: {{ .credsKey | quote }}
      {{- end }}
      {{- if .nkeySeedKey }}
      - key: {{ .nkeySeedKey | quote }}
        path: {{ .nkeySeedKey | quote }}
      {{- end }}
{{- end }}
{{- end }}
{{- if $g.nats.tls.secretName }}
- name: nats-tls
  secret:
    secretName: {{ $g.nats.tls.secretName | quote }}
    defaultMode: 0440
{{- end }}
{{- with include "model-delivery.grpcTlsSecret" . }}
- name: grpc-tls
  secret:
    secretName: {{ . | quote }}
    defaultMode: 0440
{{- end }}
{{- end }}

{{- define "model-delivery.sharedVolumeMounts" -}}
{{- $g := .Values.global -}}
{{- $auth := include "model-delivery.natsAuth" . | fromYaml -}}
{{- if and $auth.secretName (or $auth.credsKey $auth.nkeySeedKey) }}
- name: nats-auth
  mountPath: /etc/gpufleet/nats-auth
  readOnly: true
{{- end }}
{{- if $g.nats.tls.secretName }}
- name: nats-tls
  mountPath: /etc/gpufleet/nats-tls
  readOnly: true
{{- end }}
{{- if include "model-delivery.grpcTlsSecret" . }}
- name: grpc-tls
  mountPath: /etc/gpufleet/grpc-tls
  readOnly: true
{{- end }}
{{- end }}

{{/* The node role's DaemonSet: <fullname>-node. */}}
{{- define "model-delivery.nodeName" -}}
{{- printf "%s-node" (include "model-delivery.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end }}

{{/*
The Secret holding PEER_TOKEN: peer.tokenSecret.name, else the one this chart generates
(<fullname>-peer-token) when peer.tokenSecret.generate is true; empty turns peer sync off.
*/}}
{{- define "model-delivery.peerTokenSecret" -}}
{{- if .Values.peer.tokenSecret.name -}}
{{- .Values.peer.tokenSecret.name -}}
{{- else if .Values.peer.tokenSecret.generate -}}
{{- printf "%s-peer-token" (include "model-delivery.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end }}

{{/* Environment both roles read (docs/model-delivery.md#configuration). */}}
{{- define "model-delivery.commonEnv" -}}
- name: HTTP_PORT
  value: {{ .Values.ports.http | quote }}
- name: GRPC_PORT
  value: {{ .Values.ports.grpc | quote }}
- name: HF_ENDPOINT
  value: {{ .Values.hfEndpoint | quote }}
- name: MODELSCOPE_ENDPOINT
  value: {{ .Values.modelscopeEndpoint | quote }}
{{- end }}
