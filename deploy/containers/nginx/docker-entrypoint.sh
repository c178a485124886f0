#!/bin/bash
# The stand-in nginx image's entrypoint (deploy/containers/nginx/Containerfile): renders each
# $NGINX_ENVSUBST_TEMPLATE_DIR/*$NGINX_ENVSUBST_TEMPLATE_SUFFIX (/etc/nginx/templates/*.template) into
# $NGINX_ENVSUBST_OUTPUT_DIR (/etc/nginx/conf.d) with envsubst, substituting only the environment variables whose
# names match NGINX_ENVSUBST_FILTER (all when unset), so nginx's own $variables stay; then runs the command.
set -euo pipefail
template_dir=${NGINX_ENVSUBST_TEMPLATE_DIR:-/etc/nginx/templates}
suffix=${NGINX_ENVSUBST_TEMPLATE_SUFFIX:-.template}
output_dir=${NGINX_ENVSUBST_OUTPUT_DIR:-/etc/nginx/conf.d}
filter=${NGINX_ENVSUBST_FILTER:-}
if [ -d "$template_dir" ]; then
  defined=""
  while IFS= read -r name; do
    [[ $name =~ $filter ]] && defined="$defined \${$name}"
  done < <(compgen -e)
  while IFS= read -r -d '' template; do
    relative=${template#"$template_dir/"}
    output="$output_dir/${relative%"$suffix"}"
    mkdir -p "$(dirname "$output")"
    envsubst "$defined" <"$template" >"$output"
    echo "docker-entrypoint.sh: rendered $template to $output"
  done < <(find "$template_dir" -follow -type f -name "*$suffix" -print0)
fi
exec "$@"
