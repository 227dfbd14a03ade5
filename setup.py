"""Build of rmqlab's one optional C module; everything else is in pyproject.toml.

``rmqlab.engine._put`` is MessageStore.put's common case in C (see the comment at the
top of rmqlab/engine/_put.c).  It is optional: when it cannot be built (no compiler,
no zlib headers) the install goes on and put runs its Python path, which writes the
same bytes.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "rmqlab.engine._put",
            sources=["rmqlab/engine/_put.c"],
            libraries=["z"],
            extra_compile_args=["-O2"],
            optional=True,
        )
    ]
)
