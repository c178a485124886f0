{{/* Names and labels. */}}
{{- define "paylater.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "paylater.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else if contains (include "paylater.name" .) .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name (include "paylater.name" .) | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}

{{- define "paylater.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: {{ include "paylater.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* Selector labels of one component (api, worker, bank-sandbox): (dict "root" $ "component" "api"). */}}
{{- define "paylater.selectorLabels" -}}
app.kubernetes.io/name: {{ include "paylater.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{- define "paylater.image" -}}
{{- $tag := .tag | default .root.Values.image.tag | default .root.Chart.AppVersion -}}
{{- printf "%s:%s" .root.Values.image.repository $tag }}
{{- end }}

{{- define "paylater.secretName" -}}
{{- .Values.secrets.existingSecret | default (printf "%s-secrets" (include "paylater.fullname" .)) }}
{{- end }}

{{- define "paylater.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- .Values.serviceAccount.name | default (include "paylater.fullname" .) }}
{{- else }}
{{- .Values.serviceAccount.name | default "default" }}
{{- end }}
{{- end }}

{{- define "paylater.bankSandboxUrl" -}}
{{- printf "http://%s-bank-sandbox:4010" (include "paylater.fullname" .) }}
{{- end }}

{{/*
Shutdown timings: one place computes terminationGracePeriodSeconds from the same values that set the drain
variables (docs/operations.md "Shutdown and draining"). The API's bound is preStop + SHUTDOWN_DRAIN_DELAY +
SHUTDOWN_GRACE_PERIOD + 250 ms (rounded up to 1 s); a worker's is WORKER_SHUTDOWN_GRACE_TIME + the SDK's 5 s
(SHUTDOWN_FORCE_MARGIN_MS in src/worker/factory.ts). Both get a margin on top before the kubelet's SIGKILL.
*/}}
{{- define "paylater.shutdownMarginSeconds" -}}2{{- end }}
{{- define "paylater.workerForceMarginSeconds" -}}5{{- end }}

{{- define "paylater.api.terminationGracePeriodSeconds" -}}
{{- $s := .Values.api.shutdown -}}
{{- add $s.preStopSeconds $s.drainDelaySeconds $s.gracePeriodSeconds 1 (include "paylater.shutdownMarginSeconds" .) }}
{{- end }}

{{- define "paylater.worker.terminationGracePeriodSeconds" -}}
{{- add .Values.workers.shutdown.graceTimeSeconds (include "paylater.workerForceMarginSeconds" .) (include "paylater.shutdownMarginSeconds" .) }}
{{- end }}

{{/* A secret variable from the app's Secret: (dict "root" $ "name" "VAR" "optional" false). */}}
{{- define "paylater.secretEnv" -}}
- name: {{ .name }}
  valueFrom:
    secretKeyRef:
      name: {{ include "paylater.secretName" .root }}
      key: {{ .name }}
      {{- if .optional }}
      optional: true
      {{- end }}
{{- end }}

{{/* The Temporal connection (TEMPORAL_* of @temporalio/envconfig, docs/configuration.md). */}}
{{- define "paylater.temporalEnv" -}}
{{- $t := .Values.temporal -}}
- name: TEMPORAL_ADDRESS
  value: {{ required "temporal.address is required" $t.address | quote }}
- name: TEMPORAL_NAMESPACE
  value: {{ $t.namespace | quote }}
{{- if or $t.tls.enabled $t.tls.clientCertSecret $t.apiKey.enabled }}
- name: TEMPORAL_TLS
  value: "true"
{{- end }}
{{- with $t.tls.serverName }}
- name: TEMPORAL_TLS_SERVER_NAME
  value: {{ . | quote }}
{{- end }}
{{- if $t.tls.clientCertSecret }}
- name: TEMPORAL_TLS_CLIENT_CERT_PATH
  value: /etc/paylater/temporal-tls/tls.crt
- name: TEMPORAL_TLS_CLIENT_KEY_PATH
  value: /etc/paylater/temporal-tls/tls.key
{{- end }}
{{- if $t.tls.serverCaSecret }}
- name: TEMPORAL_TLS_SERVER_CA_CERT_PATH
  value: /etc/paylater/temporal-ca/ca.crt
{{- end }}
{{- if $t.apiKey.enabled }}
- name: TEMPORAL_API_KEY
  valueFrom:
    secretKeyRef:
      name: {{ $t.apiKey.secretName | default (include "paylater.secretName" .) }}
      key: {{ $t.apiKey.key }}
{{- end }}
{{- end }}

{{/* What the API and the workers share: with a real bank the configuration requires the bank's and the public
URL in both processes (src/config/schema.ts), as docker-compose.yml gives them. */}}
{{- define "paylater.commonEnv" -}}
{{- $sandbox := ternary (include "paylater.bankSandboxUrl" .) "" .Values.sandbox.enabled -}}
{{- $baseUrl := .Values.bank.baseUrl | default $sandbox | required "bank.baseUrl is required (or sandbox.enabled)" -}}
- name: NODE_ENV
  value: production
- name: LOG_FORMAT
  value: json
- name: TASK_QUEUE
  value: {{ .Values.temporal.taskQueue | quote }}
- name: BANK_BASE_URL
  value: {{ $baseUrl | quote }}
- name: BANK_AUTH_URL
  value: {{ .Values.bank.authUrl | default $baseUrl | quote }}
- name: BANK_CLIENT_ID
  value: {{ .Values.bank.clientId | default (ternary "sandbox-client" "" .Values.sandbox.enabled) | required "bank.clientId is required" | quote }}
- name: PUBLIC_BASE_URL
  value: {{ .Values.publicBaseUrl | default (ternary (printf "https://%s" .Values.ingress.host) "" .Values.ingress.enabled) | default (printf "http://%s-public:3000" (include "paylater.fullname" .)) | quote }}
{{ include "paylater.secretEnv" (dict "root" . "name" "BANK_CLIENT_SECRET") }}
{{- if or .Values.merchants.content .Values.merchants.existingSecret }}
- name: MERCHANTS_FILE
  value: /etc/paylater/merchants/merchants.json
{{- end }}
{{ include "paylater.secretEnv" (dict "root" . "name" "WEBHOOK_HASH_SECRET") }}
{{ include "paylater.secretEnv" (dict "root" . "name" "PAYLOAD_ENCRYPTION_KEYS") }}
{{ include "paylater.secretEnv" (dict "root" . "name" "CALLBACK_SIGNING_MASTER_SECRETS" "optional" true) }}
{{- /* Merchants' payload keys, shared by every pod (docs/operations.md "Erasing a merchant"); unset: the image's
read-only default. From the Secret: the store's URL holds a password, and the switch goes with it. */}}
{{ include "paylater.secretEnv" (dict "root" . "name" "MERCHANT_KEY_STORE" "optional" true) }}
{{ include "paylater.secretEnv" (dict "root" . "name" "MERCHANT_KEY_ENCRYPTION" "optional" true) }}
{{- end }}

{{- define "paylater.podSecurityContext" -}}
runAsNonRoot: true
# The image's `node` user (Dockerfile: USER node).
runAsUser: 1000
runAsGroup: 1000
fsGroup: 1000
seccompProfile:
  type: RuntimeDefault
{{- end }}

{{- define "paylater.containerSecurityContext" -}}
runAsNonRoot: true
runAsUser: 1000
runAsGroup: 1000
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities:
  drop: [ALL]
seccompProfile:
  type: RuntimeDefault
{{- end }}

{{/*
Volumes of the API and the workers: /tmp (read-only root), the merchants file, Temporal TLS: (dict "root" $
"temporalTls" true). Under temporal-worker-controller the controller mounts the client certificate itself.
*/}}
{{- define "paylater.volumes" -}}
{{- $tls := .temporalTls -}}
{{- with .root -}}
- name: tmp
  emptyDir:
    sizeLimit: 64Mi
# The image's /var/lib/paylater (its file defaults: the merchant key store, read only unless MERCHANT_KEY_STORE names a
# shared one; AUDIT_LOG comes from the Secret).
- name: state
  emptyDir:
    sizeLimit: 16Mi
{{- if .Values.merchants.existingSecret }}
- name: merchants
  secret:
    secretName: {{ .Values.merchants.existingSecret }}
    items: [{ key: merchants.json, path: merchants.json }]
{{- else if .Values.merchants.content }}
- name: merchants
  configMap:
    name: {{ include "paylater.fullname" . }}-merchants
{{- end }}
{{- if $tls }}
{{- with .Values.temporal.tls.clientCertSecret }}
- name: paylater-temporal-tls
  secret:
    secretName: {{ . }}
{{- end }}
{{- with .Values.temporal.tls.serverCaSecret }}
- name: paylater-temporal-ca
  secret:
    secretName: {{ . }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}

{{- define "paylater.volumeMounts" -}}
{{- $tls := .temporalTls -}}
{{- with .root -}}
- name: tmp
  mountPath: /tmp
- name: state
  mountPath: /var/lib/paylater
{{- if or .Values.merchants.content .Values.merchants.existingSecret }}
- name: merchants
  mountPath: /etc/paylater/merchants
  readOnly: true
{{- end }}
{{- if and $tls .Values.temporal.tls.clientCertSecret }}
- name: paylater-temporal-tls
  mountPath: /etc/paylater/temporal-tls
  readOnly: true
{{- end }}
{{- if and $tls .Values.temporal.tls.serverCaSecret }}
- name: paylater-temporal-ca
  mountPath: /etc/paylater/temporal-ca
  readOnly: true
{{- end }}
{{- end }}
{{- end }}

{{/* Who reaches the internal listener and the workers' metrics: namespaces or pods with the access label. */}}
{{- define "paylater.internalPeers" -}}
{{- $l := .Values.networkPolicy.internalAccessLabel -}}
- namespaceSelector:
    matchLabels:
      {{ $l.key }}: {{ $l.value | quote }}
- podSelector:
    matchLabels:
      {{ $l.key }}: {{ $l.value | quote }}
{{- end }}
