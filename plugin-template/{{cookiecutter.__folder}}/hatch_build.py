"""Build-time metadata: the project's trove classifiers.

``Framework :: Olive`` marks a distribution as an Olive plugin on the package index. hatchling refuses
to build with a classifier that is not in the trove-classifiers registry, and the package index refuses
to upload one, so it is added only once the registry lists it; every build after that picks it up with
no change here. Olive itself finds passes through the ``olive.passes`` entry point, not the classifier.
"""

from __future__ import annotations

from hatchling.metadata.plugin.interface import MetadataHookInterface

OLIVE_CLASSIFIER = "Framework :: Olive"
CLASSIFIERS = [
    "Programming Language :: Python :: 3",
    "Topic :: Scientific/Engineering :: Artificial Intelligence",
]


def classifiers(registered: set[str] | frozenset[str]) -> list[str]:
    """The classifiers to publish, given the set of registered trove classifiers."""
    return [*CLASSIFIERS, OLIVE_CLASSIFIER] if OLIVE_CLASSIFIER in registered else list(CLASSIFIERS)


class OliveMetadataHook(MetadataHookInterface):
    def update(self, metadata: dict) -> None:
        import trove_classifiers  # a dependency of hatchling, so always in the build environment

        metadata["classifiers"] = classifiers(trove_classifiers.classifiers)
