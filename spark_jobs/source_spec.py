"""How a tidemark source receives its options: one typed value, one Spark option.

Spark hands a Python data source its options as a map of strings. Rather than one string per
setting, written here and parsed again by position there, a source's options are one
msgspec.Struct, encoded once as JSON under the single option ``spec``, and decoded once, with its
types and constraints checked, when the query builds its reader.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, TypeVar

import msgspec

SPEC_OPTION = "spec"

# Field types the sources' options share: counts, and durations in ms.
Count = Annotated[int, msgspec.Meta(ge=1)]
Milliseconds = Annotated[int, msgspec.Meta(ge=0)]
PositiveMilliseconds = Annotated[int, msgspec.Meta(ge=1)]

Spec = TypeVar("Spec", bound=msgspec.Struct)


def spec_options(spec: msgspec.Struct) -> dict[str, str]:
    """``spec`` as Spark options: ``spark.readStream.format(...).options(**spec_options(spec))``."""
    return {SPEC_OPTION: msgspec.json.encode(spec).decode()}


def spec_from_options(options: Mapping[str, str], spec_type: type[Spec], source_name: str) -> Spec:
    """The ``spec`` option decoded as ``spec_type``. Raises ValueError naming the source, the
    option and the bad field (msgspec's path, e.g. ``$.slice_ms``) when it is missing or invalid."""
    text = options.get(SPEC_OPTION)
    if not text:
        raise ValueError(
            f"Option '{SPEC_OPTION}' is required: {source_name} takes its options as one JSON value; "
            f"build a {spec_type.__name__} and pass .options(**its.to_options())."
        )
    try:
        return msgspec.json.decode(text, type=spec_type)
    except msgspec.ValidationError as error:
        raise ValueError(
            f"Option '{SPEC_OPTION}' of {source_name} is not a valid {spec_type.__name__}: {error}"
        ) from None
    except msgspec.DecodeError as error:
        raise ValueError(f"Option '{SPEC_OPTION}' of {source_name} is not JSON: {error}") from None
