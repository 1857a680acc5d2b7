# SPDX-License-Identifier: MIT
"""The images the node test runs, built here (there is no registry).  The pause and busybox images,
from Debian's busybox-static: an OCI image layout in a tar, which `ctr images import` takes.  Both
are one layer, busybox and its applets in /bin; the pause image's entrypoint sleeps (the sandbox's
only job is to hold the pod's namespaces), busybox's is a shell.  The plugin's image, with podman
from k8s/deploy/Containerfile, as a user builds it (plugin()).
"""
import hashlib
import io
import json
import os
import shutil
import subprocess
import tarfile

PAUSE = "registry.k8s.io/pause:3.10.2"   # containerd 2.4's default sandbox image, pinned in its config
BUSYBOX = "docker.io/library/busybox:accelfs"


def _layer():
    busybox = shutil.which("busybox")
    if not busybox:
        raise AssertionError("no busybox on PATH: install busybox-static (scripts/packages.txt)")
    applets = subprocess.run([busybox, "--list"], capture_output=True, text=True, check=True).stdout.split()
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for d in ("bin", "dev", "proc", "sys", "tmp", "etc"):
            info = tarfile.TarInfo(d)
            info.type, info.mode = tarfile.DIRTYPE, 0o1777 if d == "tmp" else 0o755
            tar.addfile(info)
        with open(busybox, "rb") as f:
            data = f.read()
        info = tarfile.TarInfo("bin/busybox")
        info.size, info.mode = len(data), 0o755
        tar.addfile(info, io.BytesIO(data))
        for a in applets:
            if a != "busybox":
                info = tarfile.TarInfo(f"bin/{a}")
                info.type, info.linkname = tarfile.SYMTYPE, "busybox"
                tar.addfile(info)
    return buf.getvalue()


def _blob(tar, data):
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    info = tarfile.TarInfo(f"blobs/sha256/{digest[len('sha256:'):]}")
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))
    return {"digest": digest, "size": len(data)}


def build(path):
    """Write the OCI layout tar of both images to path."""
    layer = _layer()
    diff_id = "sha256:" + hashlib.sha256(layer).hexdigest()
    with tarfile.open(path, "w") as tar:
        layout = json.dumps({"imageLayoutVersion": "1.0.0"}).encode()
        info = tarfile.TarInfo("oci-layout")
        info.size = len(layout)
        tar.addfile(info, io.BytesIO(layout))
        layer_desc = {"mediaType": "application/vnd.oci.image.layer.v1.tar", **_blob(tar, layer)}
        manifests = []
        for name, entrypoint in ((PAUSE, ["/bin/sleep", "2147483647"]), (BUSYBOX, ["/bin/sh"])):
            config = json.dumps({
                "architecture": "amd64", "os": "linux",
                "config": {"Entrypoint": entrypoint, "Env": ["PATH=/bin"], "WorkingDir": "/"},
                "rootfs": {"type": "layers", "diff_ids": [diff_id]},
            }, sort_keys=True).encode()
            manifest = json.dumps({
                "schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                "config": {"mediaType": "application/vnd.oci.image.config.v1+json", **_blob(tar, config)},
                "layers": [layer_desc],
            }, sort_keys=True).encode()
            manifests.append({"mediaType": "application/vnd.oci.image.manifest.v1+json", **_blob(tar, manifest),
                              "platform": {"architecture": "amd64", "os": "linux"},
                              "annotations": {"io.containerd.image.name": name,
                                              "org.opencontainers.image.ref.name": name.rsplit(":", 1)[1]}})
        index = json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json",
                            "manifests": manifests}, sort_keys=True).encode()
        info = tarfile.TarInfo("index.json")
        info.size = len(index)
        tar.addfile(info, io.BytesIO(index))
    return path


PLUGIN = "localhost/accelfs-dra:test"


def plugin(workdir, binary):
    """The plugin's image as users build it (k8s/deploy/Containerfile: the static binary alone), with
    podman, in a storage of its own under workdir (vfs: no mounts to undo); a docker archive of it,
    which `ctr images import` names after its tag (PLUGIN)."""
    podman = shutil.which("podman")
    if not podman:
        raise AssertionError("no podman on PATH: the DaemonSet test builds the plugin's image with it")
    ctx = os.path.join(workdir, "context")
    os.makedirs(ctx, exist_ok=True)
    shutil.copy(binary, os.path.join(ctx, "accelfs-dra"))
    deploy = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "k8s", "deploy")
    store = [podman, f"--root={workdir}/storage", f"--runroot={workdir}/run", "--storage-driver=vfs"]
    for argv in ([*store, "build", "--quiet", "-t", PLUGIN, "-f", os.path.join(deploy, "Containerfile"), ctx],
                 [*store, "save", "--format=docker-archive", "-o", os.path.join(workdir, "plugin.tar"), PLUGIN]):
        res = subprocess.run(argv, capture_output=True, text=True)
        if res.returncode != 0:
            raise AssertionError(f"{' '.join(argv)} failed: {res.stderr}{res.stdout}")
    return os.path.join(workdir, "plugin.tar")


if __name__ == "__main__":
    import sys
    print(build(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.getcwd(), "images.tar")))
