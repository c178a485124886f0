{{/* The worker's pod template, for a Deployment per build or a WorkerDeployment: (dict "root" $ "build" $build). */}}
{{- define "paylater.workerPodTemplate" -}}
{{- $root := .root -}}
{{- $controller := eq $root.Values.workers.mode "controller" -}}
metadata:
  labels:
    {{- include "paylater.selectorLabels" (dict "root" $root "component" "worker") | nindent 4 }}
    {{- with .build }}
    paylater.example.com/build: {{ .name }}
    {{- end }}
  annotations:
    checksum/config: {{ include (print $root.Template.BasePath "/configmaps.yaml") $root | sha256sum }}
    {{- with $root.Values.workers.podAnnotations }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
spec:
  serviceAccountName: {{ include "paylater.serviceAccountName" $root }}
  automountServiceAccountToken: false
  {{- with $root.Values.imagePullSecrets }}
  imagePullSecrets:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  securityContext:
    {{- include "paylater.podSecurityContext" $root | nindent 4 }}
  # WORKER_SHUTDOWN_GRACE_TIME + the SDK's 5 s, and a margin (paylater.worker.terminationGracePeriodSeconds). No
  # preStop: a worker takes no inbound traffic, and SIGTERM itself stops its polling at once.
  terminationGracePeriodSeconds: {{ include "paylater.worker.terminationGracePeriodSeconds" $root }}
  containers:
    - name: worker
      image: {{ include "paylater.image" (dict "root" $root "tag" (.build | default dict).tag) }}
      imagePullPolicy: {{ $root.Values.image.pullPolicy }}
      {{- if $controller }}
      # The controller names the Worker Deployment and the build in TEMPORAL_DEPLOYMENT_NAME and
      # TEMPORAL_WORKER_BUILD_ID, appended after this env: the worker reads WORKER_* (src/config/schema.ts).
      command:
        - /bin/sh
        - -c
        - WORKER_DEPLOYMENT_NAME="$TEMPORAL_DEPLOYMENT_NAME" WORKER_BUILD_ID="$TEMPORAL_WORKER_BUILD_ID" exec node dist/worker.js
      {{- else }}
      command: ['node', 'dist/worker.js']
      {{- end }}
      ports:
        - name: metrics
          containerPort: 9464
      envFrom:
        - configMapRef:
            name: {{ include "paylater.fullname" $root }}-env
      env:
        {{- if not $controller }}
        {{- include "paylater.temporalEnv" $root | nindent 8 }}
        {{- end }}
        {{- include "paylater.commonEnv" $root | nindent 8 }}
        - name: WORKER_METRICS_PORT
          value: "9464"
        - name: WORKER_SHUTDOWN_GRACE_TIME
          value: {{ printf "%ds" (int $root.Values.workers.shutdown.graceTimeSeconds) | quote }}
        {{- if not $controller }}
        - name: WORKER_DEPLOYMENT_NAME
          value: {{ $root.Values.workers.deploymentName | quote }}
        {{- with .build.buildId }}
        - name: WORKER_BUILD_ID
          value: {{ . | quote }}
        {{- end }}
        {{- end }}
      # Liveness: /healthz (200 while the process answers); readiness: /readyz (both Workers RUNNING, 503 while
      # the bundle loads and from SIGTERM on), on WORKER_METRICS_PORT (docs/operations.md).
      # WORKER_METRICS_PORT listens once Temporal is reached, which a worker waits for (src/worker.ts): up to
      # 15 minutes before the liveness probe takes over.
      startupProbe:
        httpGet:
          path: /healthz
          port: metrics
        periodSeconds: 10
        failureThreshold: 90
      readinessProbe:
        httpGet:
          path: /readyz
          port: metrics
        periodSeconds: 10
        timeoutSeconds: 3
        failureThreshold: 3
      livenessProbe:
        httpGet:
          path: /healthz
          port: metrics
        periodSeconds: 10
        timeoutSeconds: 3
        failureThreshold: 6
      resources:
        {{- toYaml $root.Values.workers.resources | nindent 8 }}
      securityContext:
        {{- include "paylater.containerSecurityContext" $root | nindent 8 }}
      volumeMounts:
        {{- include "paylater.volumeMounts" (dict "root" $root "temporalTls" (not $controller)) | nindent 8 }}
  volumes:
    {{- include "paylater.volumes" (dict "root" $root "temporalTls" (not $controller)) | nindent 4 }}
  {{- with $root.Values.workers.nodeSelector }}
  nodeSelector:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with $root.Values.workers.tolerations }}
  tolerations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with $root.Values.workers.affinity }}
  affinity:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end }}
