#!/bin/sh
# virt-install equivalents of the planned domains (or: virsh define vmNN.xml).
set -eu

# vm00
virt-install \
  --name 'vm00' \
  --memory '32768' \
  --vcpus '28,sockets=1,cores=14,threads=2' \
  --cpu 'host-passthrough,cell0.id=0,cell0.cpus=0-11,cell0.memory=16777216,cell1.id=1,cell1.cpus=12-27,cell1.memory=16777216' \
  --cputune 'vcpupin0.vcpu=0,vcpupin0.cpuset=2,vcpupin1.vcpu=1,vcpupin1.cpuset=34,vcpupin2.vcpu=2,vcpupin2.cpuset=3,vcpupin3.vcpu=3,vcpupin3.cpuset=35,vcpupin4.vcpu=4,vcpupin4.cpuset=4,vcpupin5.vcpu=5,vcpupin5.cpuset=36,vcpupin6.vcpu=6,vcpupin6.cpuset=5,vcpupin7.vcpu=7,vcpupin7.cpuset=37,vcpupin8.vcpu=8,vcpupin8.cpuset=6,vcpupin9.vcpu=9,vcpupin9.cpuset=38,vcpupin10.vcpu=10,vcpupin10.cpuset=7,vcpupin11.vcpu=11,vcpupin11.cpuset=39,vcpupin12.vcpu=12,vcpupin12.cpuset=16,vcpupin13.vcpu=13,vcpupin13.cpuset=48,vcpupin14.vcpu=14,vcpupin14.cpuset=17,vcpupin15.vcpu=15,vcpupin15.cpuset=49,vcpupin16.vcpu=16,vcpupin16.cpuset=18,vcpupin17.vcpu=17,vcpupin17.cpuset=50,vcpupin18.vcpu=18,vcpupin18.cpuset=19,vcpupin19.vcpu=19,vcpupin19.cpuset=51,vcpupin20.vcpu=20,vcpupin20.cpuset=20,vcpupin21.vcpu=21,vcpupin21.cpuset=52,vcpupin22.vcpu=22,vcpupin22.cpuset=21,vcpupin23.vcpu=23,vcpupin23.cpuset=53,vcpupin24.vcpu=24,vcpupin24.cpuset=22,vcpupin25.vcpu=25,vcpupin25.cpuset=54,vcpupin26.vcpu=26,vcpupin26.cpuset=23,vcpupin27.vcpu=27,vcpupin27.cpuset=55,emulatorpin.cpuset="0-1,32-33",iothreadpin0.iothread=1,iothreadpin0.cpuset="0-1,32-33"' \
  --numatune '0,2,mode=strict,memnode0.cellid=0,memnode0.mode=strict,memnode0.nodeset=0,memnode1.cellid=1,memnode1.mode=strict,memnode1.nodeset=2' \
  --memorybacking 'hugepages.page0.size=1048576,hugepages.page0.unit=KiB,locked=on' \
  --iothreads '1' \
  --machine 'q35' \
  --boot 'uefi' \
  --memballoon 'none' \
  --osinfo 'linux2022' \
  --disk 'path=/var/lib/libvirt/images/vm00.qcow2,format=qcow2,bus=virtio' \
  --network 'network=default' \
  --host-device '0000:06:00.0' \
  --host-device '0000:06:00.1' \
  --host-device '0000:41:00.0' \
  --import \
  --noautoconsole

# vm01
virt-install \
  --name 'vm01' \
  --memory '32768' \
  --vcpus '28,sockets=1,cores=14,threads=2' \
  --cpu 'host-passthrough,cell0.id=0,cell0.cpus=0-15,cell0.memory=16777216,cell1.id=1,cell1.cpus=16-27,cell1.memory=16777216' \
  --cputune 'vcpupin0.vcpu=0,vcpupin0.cpuset=8,vcpupin1.vcpu=1,vcpupin1.cpuset=40,vcpupin2.vcpu=2,vcpupin2.cpuset=9,vcpupin3.vcpu=3,vcpupin3.cpuset=41,vcpupin4.vcpu=4,vcpupin4.cpuset=10,vcpupin5.vcpu=5,vcpupin5.cpuset=42,vcpupin6.vcpu=6,vcpupin6.cpuset=11,vcpupin7.vcpu=7,vcpupin7.cpuset=43,vcpupin8.vcpu=8,vcpupin8.cpuset=12,vcpupin9.vcpu=9,vcpupin9.cpuset=44,vcpupin10.vcpu=10,vcpupin10.cpuset=13,vcpupin11.vcpu=11,vcpupin11.cpuset=45,vcpupin12.vcpu=12,vcpupin12.cpuset=14,vcpupin13.vcpu=13,vcpupin13.cpuset=46,vcpupin14.vcpu=14,vcpupin14.cpuset=15,vcpupin15.vcpu=15,vcpupin15.cpuset=47,vcpupin16.vcpu=16,vcpupin16.cpuset=24,vcpupin17.vcpu=17,vcpupin17.cpuset=56,vcpupin18.vcpu=18,vcpupin18.cpuset=25,vcpupin19.vcpu=19,vcpupin19.cpuset=57,vcpupin20.vcpu=20,vcpupin20.cpuset=26,vcpupin21.vcpu=21,vcpupin21.cpuset=58,vcpupin22.vcpu=22,vcpupin22.cpuset=27,vcpupin23.vcpu=23,vcpupin23.cpuset=59,vcpupin24.vcpu=24,vcpupin24.cpuset=28,vcpupin25.vcpu=25,vcpupin25.cpuset=60,vcpupin26.vcpu=26,vcpupin26.cpuset=29,vcpupin27.vcpu=27,vcpupin27.cpuset=61,emulatorpin.cpuset="30-31,62-63",iothreadpin0.iothread=1,iothreadpin0.cpuset="30-31,62-63"' \
  --numatune '1,3,mode=strict,memnode0.cellid=0,memnode0.mode=strict,memnode0.nodeset=1,memnode1.cellid=1,memnode1.mode=strict,memnode1.nodeset=3' \
  --memorybacking 'hugepages.page0.size=1048576,hugepages.page0.unit=KiB,locked=on' \
  --iothreads '1' \
  --machine 'q35' \
  --boot 'uefi' \
  --memballoon 'none' \
  --osinfo 'linux2022' \
  --disk 'path=/var/lib/libvirt/images/vm01.qcow2,format=qcow2,bus=virtio' \
  --network 'network=default' \
  --host-device '0000:21:00.0' \
  --host-device '0000:21:00.1' \
  --host-device '0000:61:00.0' \
  --import \
  --noautoconsole
