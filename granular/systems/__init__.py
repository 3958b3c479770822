"""Single-body constrained systems on the same step API as `SphereWorld`."""

from .beam import Beam
from .constrained import Constraint, ConstrainedSystem

__all__ = ["Beam", "Constraint", "ConstrainedSystem"]
