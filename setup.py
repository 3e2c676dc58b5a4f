"""Builds flock for pip: setup.py only drives CMake (see CMakeLists.txt).

`pip install --no-build-isolation .` configures the CMake project, builds the
extension target `_core` and packages it with python/flock and the launcher.
Torch is not needed to build. Environment knobs:
  FLOCK_CMAKE_BUILD_DIR  reuse this CMake build tree (scripts/setup.sh does)
  FLOCK_WITH_NCCL        AUTO (default), ON or OFF
  FLOCK_CMAKE_ARGS       extra arguments for the configure step
"""

import glob
import os
import shlex
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = os.path.dirname(os.path.abspath(__file__))


class CMakeExtension(Extension):
    def __init__(self, name):
        super().__init__(name, sources=[])


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        build_dir = os.environ.get("FLOCK_CMAKE_BUILD_DIR") or os.path.join(ROOT, "build", "pip")
        build_dir = os.path.abspath(build_dir)
        configure = [
            "cmake", "-S", ROOT, "-B", build_dir,
            "-DPython3_EXECUTABLE=" + sys.executable,
            "-DFLOCK_WITH_NCCL=" + os.environ.get("FLOCK_WITH_NCCL", "AUTO"),
        ]
        if not os.environ.get("FLOCK_CMAKE_BUILD_DIR"):
            configure += ["-DFLOCK_BUILD_TESTS=OFF", "-DFLOCK_BUILD_EXAMPLES=OFF"]
        configure += shlex.split(os.environ.get("FLOCK_CMAKE_ARGS", ""))
        subprocess.check_call(configure)
        jobs = str(os.cpu_count() or 1)
        subprocess.check_call(["cmake", "--build", build_dir, "--target", "_core", "-j", jobs])
        built = glob.glob(os.path.join(build_dir, "csrc", "bindings", "_core*.so"))
        if len(built) != 1:
            raise RuntimeError("expected one built flock._core in {}, found {}".format(build_dir, built))
        target = self.get_ext_fullpath(ext.name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copyfile(built[0], target)


setup(
    name="flock",
    version="0.1.0",
    description="Decentralized deep-learning communication over MPI (neighbor allreduce, "
                "allreduce, dynamic topologies) for PyTorch and numpy",
    package_dir={"flock": "python/flock", "flockrun": "launcher/flockrun"},
    packages=["flock", "flock.elastic", "flock.torch", "flock.torch.optim", "flock.numpy",
              "flock.topology",
              "flockrun"],
    ext_modules=[CMakeExtension("flock._core")],
    cmdclass={"build_ext": CMakeBuild},
    entry_points={"console_scripts": ["flockrun = flockrun.cli:main",
                                      "flock-interactive = flockrun.interactive:main",
                                      "flock-timeline = flock.timeline_merge:main"]},
    license="Apache-2.0",
    python_requires=">=3.9",
    install_requires=["numpy"],
    # networkx is optional: flock.topology converts to and from networkx graphs when it is there.
    # "examples": what examples/python needs (the main job, train_digits.py, uses torch and
    # scikit-learn); tqdm and matplotlib only add progress bars and plots, skipped without them.
    # "interactive": what flock-interactive needs (its engines are ipyparallel's; tested with
    # 7.1, Debian 12's, and it runs ipyparallel.controller and .engine.app as 7 lays them out).
    extras_require={
        "networkx": ["networkx>=2.5"],
        "torch": ["torch"],
        "examples": ["torch", "torchvision", "scikit-learn", "tqdm", "matplotlib"],
        "interactive": ["ipyparallel>=7"],
    },
    zip_safe=False,
)
