# The tutorial's kopf operator doing the same work per Website as this
# operator: a Deployment, a ClusterIP Service, an event, and a status that
# kopf writes from the handler's result. One API client for the process
# (the tutorial reloads its configuration on every call). The benchmark's
# kopf scenario runs it (go run ./test/bench -peer-kopf DIR); kopf itself is
# installed outside the repository, as docs/performance.md says.
import os

import kopf
import kubernetes

kubernetes.config.load_kube_config(config_file=os.environ['KUBECONFIG'])
APPS = kubernetes.client.AppsV1Api()
CORE = kubernetes.client.CoreV1Api()


@kopf.on.create('example.com', 'v1', 'websites')
def create_fn(spec, name, namespace, body, **kwargs):
    image = spec.get('image', 'nginx:1.25')
    port = spec.get('port', 80)
    labels = {'app': name}
    deployment = {
        'apiVersion': 'apps/v1', 'kind': 'Deployment', 'metadata': {'name': name, 'labels': labels},
        'spec': {'replicas': 1, 'selector': {'matchLabels': labels},
                 'template': {'metadata': {'labels': labels},
                              'spec': {'containers': [{'name': 'website', 'image': image,
                                                       'ports': [{'containerPort': port}]}]}}},
    }
    service = {
        'apiVersion': 'v1', 'kind': 'Service', 'metadata': {'name': name, 'labels': labels},
        'spec': {'selector': labels, 'ports': [{'port': port, 'targetPort': port}]},
    }
    kopf.adopt(deployment, owner=body)
    kopf.adopt(service, owner=body)
    APPS.create_namespaced_deployment(namespace=namespace, body=deployment)
    CORE.create_namespaced_service(namespace=namespace, body=service)
    kopf.info(body, reason='DeploymentCreated', message=f'Created Deployment {name}')
    return {'deployment': name, 'service': name}
