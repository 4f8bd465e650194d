"""Just enough of Kustomize to render deploy/k8s and its overlays for the tests (no kustomize
binary can be installed here): resources (files and directories), namespace, ``images``, and
strategic-merge patches — maps merged, ``null`` deleting a field, lists of named items merged
by name (as Kubernetes does for containers and volumes), ``$patch: delete`` removing an object.
A patch outside that subset is rejected rather than rendered wrongly."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

from tests.deploy.promql import load_yaml_docs

__all__ = ["render"]

Key = tuple[str, str]


def render(directory: Path) -> dict[Key, dict[str, Any]]:
    """The objects ``kubectl apply -k directory`` would apply, by (kind, name)."""
    kustomization = yaml.safe_load((directory / "kustomization.yaml").read_text())
    objects: dict[Key, dict[str, Any]] = {}
    for resource in kustomization.get("resources", []):
        path = directory / resource
        found = render(path) if path.is_dir() else {_key(d): d for d in load_yaml_docs(path)}
        assert not set(found) & set(objects), f"{path}: objects defined twice"
        objects.update(found)
    if "namespace" in kustomization:
        for key, obj in objects.items():
            if key[0] != "Namespace":
                obj["metadata"]["namespace"] = kustomization["namespace"]
    for patch in kustomization.get("patches", []):
        for doc in load_yaml_docs(directory / patch["path"]):
            key = _key(doc)
            assert key in objects, f"{patch['path']} patches {key}, which is not among the resources"
            if doc.get("$patch") == "delete":
                del objects[key]
            else:
                objects[key] = _merge(objects[key], doc)
    for image in kustomization.get("images", []):
        for obj in objects.values():
            for container in _containers(obj):
                name, _, tag = container["image"].partition(":")
                if name == image["name"]:
                    container["image"] = f"{image.get('newName', name)}:{image.get('newTag', tag)}"
    return objects


def _key(doc: dict[str, Any]) -> Key:
    return doc["kind"], doc["metadata"]["name"]


def _containers(obj: dict[str, Any]) -> list[dict[str, Any]]:
    pod = obj.get("spec", {}).get("template", {}).get("spec", {})
    return list(pod.get("containers", []))


def _merge(base: Any, patch: Any) -> Any:
    if isinstance(base, dict) and isinstance(patch, dict):
        merged = copy.deepcopy(base)
        for key, value in patch.items():
            if value is None:
                merged.pop(key, None)
            elif key in merged:
                merged[key] = _merge(merged[key], value)
            else:
                merged[key] = copy.deepcopy(value)
        return merged
    if isinstance(base, list) and isinstance(patch, list):
        assert all(isinstance(item, dict) and "name" in item for item in base + patch), \
            "only lists of named items are merged (containers, volumes, env, ports)"
        merged_list = [copy.deepcopy(item) for item in base]
        for item in patch:
            index = next((i for i, old in enumerate(merged_list) if old["name"] == item["name"]), None)
            if index is None:
                merged_list.append(copy.deepcopy(item))
            else:
                merged_list[index] = _merge(merged_list[index], item)
        return merged_list
    return copy.deepcopy(patch)
