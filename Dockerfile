# evalbot GitHub Action image, in two stages.
#   builder: downloads every dependency hash-checked (requirements.lock), builds rouge-score's wheel from its
#            sdist with the hash-pinned setuptools of requirements-build.lock (no unpinned build environment),
#            installs the wheels under /install and compiles their bytecode.
#   final:   the python base plus /install and our source: no compiler, no pip run, no git.
# git (and perl, 86 MB) is not installed: the baseline is read at the PR's base commit through the contents API,
# and actions/checkout's depth-1 clone does not hold that commit anyway; when the API cannot answer, the run stops
# with exit 3 (could not measure; tests/action/test_image_without_git.py) instead of falling back to `git show`.
# Releases push this image to ghcr.io/evalbot/evalbot and pin action.yml to its digest (.github/workflows/
# release.yml); main builds it from source (`image: Dockerfile`) for forks and contributors.
# No USER (the workspace mount must stay writable; files we create are chowned to the workspace's owner) and no
# WORKDIR (the runner mounts /github/workspace and starts there): every path below is absolute.
ARG PYTHON_IMAGE=python:3.12.12-slim-bookworm@sha256:593bd06efe90efa80dc4eee3948be7c0fde4134606dd40d8dd8dbcade98e669c

FROM ${PYTHON_IMAGE} AS builder
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
COPY requirements-build.lock requirements.lock /build/
# numpy is left out of the image: rouge-score declares it for its bootstrap aggregation (rouge_score.scoring),
# which evalbot never imports (tests/criteria/test_response_match_imports.py); it is 73 MB of the image.
RUN pip install --require-hashes --only-binary=:all: -r /build/requirements-build.lock \
    && pip wheel --require-hashes --no-deps --no-build-isolation -r /build/requirements.lock -w /build/wheels \
    && rm /build/wheels/numpy-*.whl \
    && pip install --no-index --no-deps --no-compile --root /install --prefix /usr/local /build/wheels/*.whl \
    && find /install/usr/local/lib -depth -type d \( -name tests -o -name test \) -path '*/site-packages/*' \
        -exec rm -r {} + \
    && find /install/usr/local/lib \( -name '*.pyx' -o -name '*.pxd' -o -name '*.pxi' -o -name '*.h' \) -delete

FROM ${PYTHON_IMAGE}
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
COPY --from=builder /install/usr/local /usr/local
# The source is not pip-installed: python puts the script's directory (/app) first on sys.path.
COPY evalbot /app/evalbot
COPY entrypoint.py /app/entrypoint.py
# The python base ships no bytecode (the official image deletes every *.pyc) and PYTHONDONTWRITEBYTECODE keeps it
# so: without this, each start compiles the modules a run imports (about a second). Only those are compiled: every
# evalbot module and the lazily imported scorers are imported once here, and the bytecode of exactly the modules
# that loaded (standard library, dependencies, /app) is written, with unchecked hashes (the image is immutable).
# Compiling whole trees instead costs 12 MB of bytecode no run reads. Modules outside that set still run, compiled
# on import as usual. Packaged tests, C headers and Cython sources are dropped in the builder (8 MB, never imported).
RUN python -c "import importlib, pkgutil, py_compile, sys; \
sys.path.insert(0, '/app'); import evalbot; \
names = [m.name for m in pkgutil.walk_packages(evalbot.__path__, 'evalbot.') if not m.name.endswith('__main__')]; \
names += ['sacrebleu.metrics.bleu', 'nltk.data']; \
[importlib.import_module(n) for n in names]; importlib.import_module('evalbot.criteria.vertex_text').import_rouge_scorer(); \
files = {getattr(m, '__file__', None) for m in list(sys.modules.values())}; \
files = sorted(f for f in files if f and f.endswith('.py') and f.startswith(('/usr/local/lib/python3.12/', '/app/'))); \
[py_compile.compile(f, doraise=True, invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH) for f in files]; \
print(len(files), 'modules compiled')"

ENTRYPOINT ["python", "/app/entrypoint.py"]
