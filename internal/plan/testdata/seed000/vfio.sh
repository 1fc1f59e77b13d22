#!/bin/sh
# Bind the planned devices to vfio-pci, persistently (driverctl keeps the override across reboots).
set -eu
modprobe vfio-pci

# vm00
driverctl set-override 0000:06:00.0 vfio-pci   # gpu GeForce RTX 3090, now on nvidia
driverctl set-override 0000:06:00.1 vfio-pci   # function Audio device, now on snd_hda_intel
driverctl set-override 0000:41:00.0 vfio-pci   # nic ConnectX-4 Lx, now on mlx5_core
driverctl set-override 0000:41:00.1 vfio-pci   # nic ConnectX-4 Lx, now on mlx5_core

# vm01
driverctl set-override 0000:21:00.0 vfio-pci   # gpu GeForce RTX 3090, now on nvidia
driverctl set-override 0000:21:00.1 vfio-pci   # function Audio device, now on snd_hda_intel
driverctl set-override 0000:61:00.0 vfio-pci   # nic ConnectX-4 Lx, now on mlx5_core
driverctl set-override 0000:61:00.1 vfio-pci   # nic ConnectX-4 Lx, now on mlx5_core

# Without driverctl: 'options vfio-pci ids=VENDOR:DEVICE,...' in /etc/modprobe.d/vfio.conf plus
# 'softdep DRIVER pre: vfio-pci' catches every device with those ids, including ones the host keeps.
