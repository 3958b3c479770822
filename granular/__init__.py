"""granular: nonsmooth mechanics of colliding spheres and constrained systems.

Public API::

    import granular as gr
    world = gr.SphereWorld(positions, radii, walls=[gr.Box(lower, upper, open_top=True)])
    sim = gr.Simulation(world, dt=1e-3)
    traj = sim.run(duration=1.0, record_every=10)
    traj.save("run.h5")

Heavy optional parts (cvxpy, pyvista, matplotlib) are imported where used.
"""

from .constraints import ConstraintSet, Contacts
from .errors import (
    ConvergenceError,
    GranularError,
    InvalidInputError,
    JammingError,
    MassMatrixError,
    NonFiniteError,
    OverlapError,
    RadiusError,
    RunInterrupted,
    SolverError,
    SolverToleranceWarning,
    TimeStepWarning,
    TrajectoryFileError,
)
from .records.results import SolverStats, StepResult
from .simulation import Simulation
from .records.trajectory import Trajectory
from .walls import Box, Cone, Cylinder, Panel, PeriodicBox, Plane
from .walls.meshes import TriangleMesh
from .spheres.flows import BoxRegion, CylinderRegion, Inlet, Outlet
from .walls.surfaces import ContactRows, Surface, WallShape, register_wall
from .spheres.overlaps import remove_overlaps
from .systems import Beam, Constraint, ConstrainedSystem
from .spheres.world import SphereWorld
from .records.configurations import world_from_file

__version__ = "0.1.0"

__all__ = [
    "Beam",
    "Box",
    "Cone",
    "Constraint",
    "ContactRows",
    "Cylinder",
    "Panel",
    "Surface",
    "WallShape",
    "register_wall",
    "ConstrainedSystem",
    "ConstraintSet",
    "Contacts",
    "ConvergenceError",
    "GranularError",
    "InvalidInputError",
    "JammingError",
    "MassMatrixError",
    "NonFiniteError",
    "OverlapError",
    "PeriodicBox",
    "Plane",
    "RadiusError",
    "RunInterrupted",
    "TimeStepWarning",
    "Simulation",
    "SolverError",
    "SolverStats",
    "SolverToleranceWarning",
    "SphereWorld",
    "StepResult",
    "Trajectory",
    "TriangleMesh",
    "Inlet",
    "Outlet",
    "BoxRegion",
    "CylinderRegion",
    "TrajectoryFileError",
    "remove_overlaps",
    "world_from_file",
]
