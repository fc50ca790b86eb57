{{/*
Chart name, truncated to 63 characters (the DNS label limit).
*/}}
{{- define "joinery.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Fully qualified app name: <release>-joinery, or the release name alone when
it already contains the chart name. Truncated to 52 characters so that
"<fullname>-headless" and StatefulSet pod names stay within 63.
*/}}
{{- define "joinery.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 52 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 52 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 52 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/*
Name of the headless Service that gives each pod a stable DNS name for
gossip seeds.
*/}}
{{- define "joinery.headlessName" -}}
{{- printf "%s-headless" (include "joinery.fullname" .) }}
{{- end }}

{{/*
Chart label value.
*/}}
{{- define "joinery.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Common labels.
*/}}
{{- define "joinery.labels" -}}
helm.sh/chart: {{ include "joinery.chart" . }}
{{ include "joinery.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/*
Selector labels. Immutable on a StatefulSet: never add to them.
*/}}
{{- define "joinery.selectorLabels" -}}
app.kubernetes.io/name: {{ include "joinery.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/*
Container image reference.
*/}}
{{- define "joinery.image" -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) }}
{{- end }}

{{/*
Gossip seeds, comma separated: the first cluster.seedCount pods (at least
one, at most replicaCount) as <fullname>-<i>.<headless svc>:<gossipPort>.
*/}}
{{- define "joinery.seeds" -}}
{{- $fullname := include "joinery.fullname" . }}
{{- $svc := include "joinery.headlessName" . }}
{{- $n := max 1 (min (int .Values.cluster.seedCount) (int .Values.replicaCount)) | int }}
{{- $seeds := list }}
{{- range $i := until $n }}
{{- $seeds = append $seeds (printf "%s-%d.%s:%d" $fullname $i $svc (int $.Values.cluster.gossipPort)) }}
{{- end }}
{{- join "," $seeds }}
{{- end }}

{{/*
The job file. A map job gets the chart's cluster and state settings
overlaid; a string job is used verbatim.
*/}}
{{- define "joinery.jobFile" -}}
{{- if kindIs "string" .Values.job }}
{{- .Values.job }}
{{- else }}
{{- $job := deepCopy (.Values.job | default dict) }}
{{- $cluster := dict }}
{{- $_ := set $cluster "gossip" (printf "0.0.0.0:%d" (int .Values.cluster.gossipPort)) }}
{{- $_ := set $cluster "remote" (printf "0.0.0.0:%d" (int .Values.cluster.remotePort)) }}
{{- $_ := set $cluster "seeds" (splitList "," (include "joinery.seeds" .)) }}
{{- $_ := set $cluster "label" (.Values.cluster.label | default (include "joinery.fullname" .)) }}
{{- $_ := set $cluster "secret_key" "${JOINERY_GOSSIP_KEY}" }}
{{- $tls := dict "ca_file" "/etc/joinery-tls/ca.crt" "cert_file" "/etc/joinery-tls/tls.crt" "key_file" "/etc/joinery-tls/tls.key" }}
{{- with .Values.cluster.tls.serverName }}
{{- $_ := set $tls "server_name" . }}
{{- end }}
{{- $_ := set $cluster "tls" $tls }}
{{- $redis := dict "addr" .Values.redis.addr }}
{{- if .Values.redis.existingSecret }}
{{- $_ := set $redis "password" "${JOINERY_REDIS_PASSWORD}" }}
{{- end }}
{{- $_ := mergeOverwrite $job (dict "cluster" $cluster "state" (dict "store" "redis" "redis" $redis)) }}
{{- toYaml $job }}
{{- end }}
{{- end }}

{{/*
Names of the gossip key and remoting TLS Secrets: the given ones, or the
ones the chart generates.
*/}}
{{- define "joinery.gossipSecret" -}}
{{- .Values.cluster.secretKey.existingSecret | default (printf "%s-gossip" (include "joinery.fullname" .)) }}
{{- end }}
{{- define "joinery.gossipSecretKey" -}}
{{- if .Values.cluster.secretKey.existingSecret }}{{ .Values.cluster.secretKey.key }}{{ else }}gossip-key{{ end }}
{{- end }}
{{- define "joinery.tlsSecret" -}}
{{- .Values.cluster.tls.existingSecret | default (printf "%s-remoting-tls" (include "joinery.fullname" .)) }}
{{- end }}
{{- /* The admin API's tokens: an existing Secret's, or the generated <fullname>-admin. */ -}}
{{- define "joinery.adminSecret" -}}
{{- .Values.admin.token.existingSecret | default (printf "%s-admin" (include "joinery.fullname" .)) }}
{{- end }}
{{- define "joinery.adminSecretKey" -}}
{{- if .Values.admin.token.existingSecret }}{{ .Values.admin.token.key }}{{ else }}admin-token{{ end }}
{{- end }}
{{- define "joinery.readSecret" -}}
{{- .Values.admin.readToken.existingSecret | default (printf "%s-admin" (include "joinery.fullname" .)) }}
{{- end }}
{{- define "joinery.readSecretKey" -}}
{{- if .Values.admin.readToken.existingSecret }}{{ .Values.admin.readToken.key }}{{ else }}read-token{{ end }}
{{- end }}
