FROM python:3.11-slim
# One embedding thread per process (settings pin it too): parallelism comes from gunicorn/Celery processes.
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 SM_EMBED_THREADS=1
WORKDIR /app
COPY requirements.txt .
RUN pip install --no-cache-dir -r requirements.txt
COPY . .
RUN SM_DEBUG=1 python -c "print('build ok')"
EXPOSE 8000
# Workers, timeout, recycling, warm start and access log: gunicorn.conf.py.
CMD ["gunicorn", "storemind.wsgi:application", "-c", "gunicorn.conf.py"]
