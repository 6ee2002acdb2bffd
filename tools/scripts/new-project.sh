#!/bin/bash
# usage: mkproj.sh <root> <name> <type-tag> <scope-tag> <projectType>
root=$1; name=$2; type=$3; scope=$4; ptype=$5
mkdir -p $root
cat > $root/project.json <<J
{
  "name": "$name",
  "\$schema": "../../node_modules/nx/schemas/project-schema.json",
  "sourceRoot": "$root/src",
  "projectType": "$ptype",
  "tags": ["type:$type", "scope:$scope"],
  "targets": {
    "test": { "executor": "nx:run-commands", "options": { "command": "npx jest {projectRoot}" } },
    "lint": { "executor": "nx:run-commands", "options": { "command": "npx eslint {projectRoot}" } }
  }
}
J
