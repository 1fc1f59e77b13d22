#!/bin/sh
# Bind the planned devices to vfio-pci, persistently (driverctl keeps the override across reboots).
set -eu

# The host's NVIDIA driver must let go of the GPUs first (users of the modules stopped, then
# the modules removed, dependants first). Better still: do not install the driver on the host.
systemctl stop nvidia-persistenced.service nvidia-fabricmanager.service nvidia-dcgm.service 2>/dev/null || true
for m in nvidia_drm nvidia_modeset nvidia_uvm nvidia_peermem nvidia; do
  if [ -d /sys/module/$m ]; then modprobe -r "$m"; fi
done
modprobe vfio-pci

# vm00
driverctl set-override 0000:06:00.0 vfio-pci   # gpu GeForce RTX 3090, now on nvidia
driverctl set-override 0000:06:00.1 vfio-pci   # function Audio device, now on snd_hda_intel; comes along: same IOMMU group 11
driverctl set-override 0000:41:00.0 vfio-pci   # nic ConnectX-4 Lx, now on mlx5_core

# vm01
driverctl set-override 0000:21:00.0 vfio-pci   # gpu GeForce RTX 3090, now on nvidia
driverctl set-override 0000:21:00.1 vfio-pci   # function Audio device, now on snd_hda_intel; comes along: same IOMMU group 13
driverctl set-override 0000:61:00.0 vfio-pci   # nic ConnectX-4 Lx, now on mlx5_core

# Without driverctl: 'options vfio-pci ids=VENDOR:DEVICE,...' in /etc/modprobe.d/vfio.conf plus
# 'softdep DRIVER pre: vfio-pci' catches every device with those ids, including ones the host keeps.
