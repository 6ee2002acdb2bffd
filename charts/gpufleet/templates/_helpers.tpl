{{/*
The full name a subchart gives its resources, computed here the same way the subchart's own
"<chart>.fullname" does, for NOTES.txt. Call with (dict "root" $ "chart" "scheduler").
*/}}
{{- define "gpufleet.subchartFullname" -}}
{{- $values := index .root.Values .chart | default dict -}}
{{- if $values.fullnameOverride -}}
{{- $values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .chart $values.nameOverride -}}
{{- if contains $name .root.Release.Name -}}
{{- .root.Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .root.Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end }}
