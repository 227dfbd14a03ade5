"""Build of rmqlab's two optional C modules; everything else is in pyproject.toml.

``rmqlab.engine._put`` is MessageStore.put's common case in C, and
``rmqlab.engine._group_commit`` the SYNC_FLUSH group commit with a flusher thread that
does not take the GIL (see the comment at the top of each .c file).  Both are
optional: when one cannot be built (no compiler, no zlib headers) the install goes on
and the store uses its Python counterpart, which writes the same bytes.
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
        ),
        Extension(
            "rmqlab.engine._group_commit",
            sources=["rmqlab/engine/_group_commit.c"],
            extra_compile_args=["-O2"],
            optional=True,
        ),
    ]
)
