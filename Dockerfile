# evalbot GitHub Action image. The runner builds it on every job, so the dependency layer comes first
# and stays cached while only the source changes. No USER (the workspace mount must stay writable) and
# no WORKDIR (the runner mounts /github/workspace and starts there): every path below is absolute.
FROM python:3.12.12-slim-bookworm@sha256:593bd06efe90efa80dc4eee3948be7c0fde4134606dd40d8dd8dbcade98e669c

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

# git is the fallback for reading the baseline at the PR's base commit; the workspace is owned by the
# runner's user, so git must be told to trust it (actions/runner#2033).
RUN apt-get update \
    && apt-get install -y --no-install-recommends git \
    && rm -rf /var/lib/apt/lists/* \
    && git config --system --add safe.directory '*'

COPY requirements.lock /app/requirements.lock
RUN pip install --no-cache-dir --require-hashes -r /app/requirements.lock

# The source is not pip-installed: python puts the script's directory (/app) first on sys.path.
COPY evalbot /app/evalbot
COPY entrypoint.py /app/entrypoint.py
RUN python -m compileall -q /app/evalbot

ENTRYPOINT ["python", "/app/entrypoint.py"]
