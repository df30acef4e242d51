{{/* The driver's name: the CSIDriver's, and every volume's spec.csi.driver. */}}
{{- define "os2g-csi.driver" -}}csi.os2g.io{{- end -}}

{{- define "os2g-csi.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{- define "os2g-csi.labels" -}}
app.kubernetes.io/name: os2g-csi
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- end -}}

{{/* Where the plugin's socket lives on the node, as the kubelet finds it. */}}
{{- define "os2g-csi.pluginDir" -}}
{{ .Values.kubeletDir }}/plugins/{{ include "os2g-csi.driver" . }}
{{- end -}}
