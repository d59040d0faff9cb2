FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
WORKDIR /app
COPY requirements.txt .
RUN pip install --no-cache-dir -r requirements.txt
COPY . .
RUN SM_DEBUG=1 python -c "print('build ok')"
EXPOSE 8000
CMD ["gunicorn", "storemind.wsgi:application", "--bind", "0.0.0.0:8000", "--workers", "3"]
