"""The one C extension: the ZMQ channel's one-change messages (swssd/channels/zmq/_speedups.c).

Optional: where it cannot be built (no C compiler or Python headers) the install goes on and
the channel uses the same code in Python (swssd/channels/zmq/speedups.py), slower.
Everything else is in pyproject.toml.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "swssd.channels.zmq._speedups",
            sources=["swssd/channels/zmq/_speedups.c"],
            extra_compile_args=[
                "-O2", "-std=c99", "-Wall", "-Wextra", "-Wno-unused-parameter", "-Werror=implicit-function-declaration"
            ],
            optional=True,
        )
    ]
)
