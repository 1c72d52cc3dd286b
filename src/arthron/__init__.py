"""arthron: musculoskeletal biomechanics that speaks OpenSim's file formats."""
__version__ = "0.1.0"
