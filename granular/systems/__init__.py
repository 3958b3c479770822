"""Single-body constrained systems on the same step API as `SphereWorld`."""
from .constrained import Constraint, ConstrainedSystem

__all__ = ["Constraint", "ConstrainedSystem"]
