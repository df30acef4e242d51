# The demo's seeding and training jobs: PyTorch, torchvision, Pillow, boto3, and the os2g Python client.
FROM pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime
RUN pip install --no-cache-dir boto3
COPY clients/python /opt/os2g-client
RUN pip install --no-cache-dir /opt/os2g-client
COPY compose/seed.py compose/train.py /app/
WORKDIR /app
