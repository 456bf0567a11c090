# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""The parameter side both node classes share (the plain node and the lifecycle node): the
parameters declared once, each change validated on set and applied after it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rcl_interfaces.msg import SetParametersResult

from ..core.settings.table import Settings
from .compat import add_parameter_callbacks
from .parameters import changed_values, check_changes, declare_parameters, node_settings

if TYPE_CHECKING:
    from .perception import Perception


class ParameterHandling:
    """The parameter side both node classes share: declared once, validated on set, applied
    after set to the :class:`Perception` in ``self.perception`` (when there is one).

    ``managed`` (the lifecycle node): restart-only parameters may be set while unconfigured."""

    perception: Perception | None
    managed = False

    def setup_parameters(self) -> Settings:
        """Declare the parameters and register the callbacks; the checked settings."""
        settings = declare_parameters(self, self.managed)
        add_parameter_callbacks(self, self._validate_parameters, self._apply_parameters)
        return settings

    def current_settings(self) -> Settings:
        """The settings of the parameters as they are now (each was checked when set)."""
        return node_settings(self)

    def _validate_parameters(self, params: list) -> SetParametersResult:
        state = None  # the plain node
        if self.managed:
            state = "unconfigured" if self.perception is None \
                else self.perception.state or "inactive"
        if self.perception is None:  # lifecycle, unconfigured: configure checks the rest
            return check_changes(self.current_settings(), params, lifecycle_state=state)
        result = check_changes(self.perception.settings, params, self.perception.spec, state)
        confidence = changed_values(params).get("points_min_confidence")
        note = self.perception.pipeline.confidence_note(confidence) if result.successful \
            and confidence not in (None, self.perception.settings.points_min_confidence) \
            else ""
        # a filter the model cannot apply is refused, never accepted and ignored (its own
        # value again changes nothing: accepted, as ros2 param load of the same YAML does)
        return SetParametersResult(successful=False, reason=note) if note else result

    def _apply_parameters(self, params: list) -> None:
        changes = changed_values(params)
        if changes and self.perception is not None:
            self.perception.apply(changes)
