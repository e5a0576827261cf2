// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Module entry points, `rdma link` operations and netdev events.
 *
 * Devices are kept on softrvt_devices so that netdev events and rmmod find
 * exactly softrvt's devices: as an out-of-tree driver softrvt has no
 * driver_id of its own to ask ib_core for them.
 *
 * Lock order: RTNL, then softrvt_devices_lock.  Nothing is called into
 * ib_core with softrvt_devices_lock held, since ib_core takes RTNL.
 */

#include <linux/debugfs.h>
#include <linux/if_vlan.h>
#include <linux/module.h>
#include <linux/seq_file.h>
#include <rdma/ib_addr.h>
#include <rdma/rdma_netlink.h>

#include "softrvt.h"

static LIST_HEAD(softrvt_devices);
static DEFINE_MUTEX(softrvt_devices_lock);
static struct dentry *softrvt_debugfs;

static struct softrvt_dev_info *softrvt_find_dev_locked(struct net_device *ndev)
{
	struct softrvt_dev_info *rdi;

	lockdep_assert_held(&softrvt_devices_lock);
	list_for_each_entry(rdi, &softrvt_devices, list)
		if (rdi->ndev == ndev)
			return rdi;
	return NULL;
}

/**
 * softrvt_forget_dev - take a device off softrvt_devices
 * @rdi: the device; being on the list or not are both fine
 */
void softrvt_forget_dev(struct softrvt_dev_info *rdi)
{
	mutex_lock(&softrvt_devices_lock);
	list_del_init(&rdi->list);
	mutex_unlock(&softrvt_devices_lock);
}

static bool softrvt_netdev_active(struct net_device *ndev)
{
	return netif_running(ndev) && netif_carrier_ok(ndev);
}

/**
 * softrvt_newlink - `rdma link add NAME type softrvt netdev DEV`
 * @ibdev_name: NAME
 * @ndev: DEV, held by the caller for the duration of the call
 *
 * Return: 0, -EEXIST if DEV already has a softrvt device, -EPERM for a
 * VLAN device, or the error of the registration.
 */
static int softrvt_newlink(const char *ibdev_name, struct net_device *ndev)
{
	struct softrvt_dev_info *rdi;
	int ret;

	if (is_vlan_dev(ndev))
		return -EPERM;

	rdi = softrvt_alloc_dev(ndev);
	if (!rdi)
		return -ENOMEM;

	/* Claim the netdev before registering, so a racing add sees it. */
	mutex_lock(&softrvt_devices_lock);
	if (softrvt_find_dev_locked(ndev)) {
		mutex_unlock(&softrvt_devices_lock);
		ib_dealloc_device(&rdi->ibdev);
		return -EEXIST;
	}
	list_add_tail(&rdi->list, &softrvt_devices);
	mutex_unlock(&softrvt_devices_lock);

	ret = softrvt_net_attach(rdi);
	if (ret)
		goto err;

	rtnl_lock();
	rdi->port_active = softrvt_netdev_active(ndev);
	rdi->port_mtu = iboe_get_mtu(ndev->mtu);
	rtnl_unlock();

	ret = softrvt_register_dev(rdi, ibdev_name);
	if (ret)
		goto err;
	ibdev_dbg(&rdi->ibdev, "added on %s, MTU %d, port %s\n",
		  netdev_name(ndev), ib_mtu_enum_to_int(rdi->port_mtu),
		  rdi->port_active ? "active" : "down");
	return 0;

err:
	/* Its dealloc_driver takes it off softrvt_devices and the namespace. */
	ib_dealloc_device(&rdi->ibdev);
	return ret;
}

static struct rdma_link_ops softrvt_link_ops = {
	.type = "softrvt",
	.newlink = softrvt_newlink,
};

/*
 * Runs under RTNL.  The device is pinned with ib_device_try_get(), which
 * fails while it is not, or no longer, registered.
 */
static int softrvt_netdev_event(struct notifier_block *nb, unsigned long event,
				void *arg)
{
	struct net_device *ndev = netdev_notifier_info_to_dev(arg);
	struct softrvt_dev_info *rdi;
	bool active;

	mutex_lock(&softrvt_devices_lock);
	rdi = softrvt_find_dev_locked(ndev);
	if (rdi && !ib_device_try_get(&rdi->ibdev))
		rdi = NULL;
	mutex_unlock(&softrvt_devices_lock);
	if (!rdi)
		return NOTIFY_DONE;

	switch (event) {
	case NETDEV_UNREGISTER:
		ibdev_dbg(&rdi->ibdev, "%s is going: removing the device\n",
			  netdev_name(ndev));
		ib_unregister_device_queued(&rdi->ibdev);
		break;
	case NETDEV_CHANGEMTU:
		WRITE_ONCE(rdi->port_mtu, iboe_get_mtu(ndev->mtu));
		ibdev_dbg(&rdi->ibdev, "%s MTU %u: path MTU at most %d\n",
			  netdev_name(ndev), ndev->mtu,
			  ib_mtu_enum_to_int(rdi->port_mtu));
		break;
	case NETDEV_UP:
	case NETDEV_DOWN:
	case NETDEV_CHANGE:
		active = softrvt_netdev_active(ndev);
		if (active != rdi->port_active) {
			ibdev_dbg(&rdi->ibdev, "%s event %lu: port %s\n",
				  netdev_name(ndev), event,
				  active ? "active" : "down");
			rdi->port_active = active;
			softrvt_port_event(rdi, active ? IB_EVENT_PORT_ACTIVE :
						     IB_EVENT_PORT_ERR);
		}
		break;
	}
	ib_device_put(&rdi->ibdev);
	return NOTIFY_OK;
}

static struct notifier_block softrvt_netdev_notifier = {
	.notifier_call = softrvt_netdev_event,
};

/*
 * debugfs softrvt/rx_queued: for each registered device, the bytes its
 * QPs' received packets hold now and the cap, so that a test can see the
 * accounting return to zero.
 */
static int softrvt_rx_queued_show(struct seq_file *s, void *unused)
{
	struct softrvt_dev_info *rdi;

	mutex_lock(&softrvt_devices_lock);
	list_for_each_entry(rdi, &softrvt_devices, list)
		if (dev_name(&rdi->ibdev.dev))
			seq_printf(s, "%s %ld %ld\n", dev_name(&rdi->ibdev.dev),
				   atomic_long_read(&rdi->rx_queued),
				   SOFTRVT_RX_DEV_MAX_BYTES);
	mutex_unlock(&softrvt_devices_lock);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(softrvt_rx_queued);

/*
 * debugfs softrvt/rx_hold, for tests: "DEVICE 1" holds the handling of
 * the device's received packets, "DEVICE 0" releases it (softrvt_rx_hold());
 * reading lists the devices held.  A test of the receive caps needs the
 * packets to stay queued while it sends, which no scheduling trick
 * guarantees on a busy machine.  Root only, as debugfs is.
 */
static int softrvt_rx_hold_show(struct seq_file *s, void *unused)
{
	struct softrvt_dev_info *rdi;

	mutex_lock(&softrvt_devices_lock);
	list_for_each_entry(rdi, &softrvt_devices, list)
		if (READ_ONCE(rdi->rx_hold) && dev_name(&rdi->ibdev.dev))
			seq_printf(s, "%s\n", dev_name(&rdi->ibdev.dev));
	mutex_unlock(&softrvt_devices_lock);
	return 0;
}

static int softrvt_rx_hold_open(struct inode *inode, struct file *file)
{
	return single_open(file, softrvt_rx_hold_show, NULL);
}

static ssize_t softrvt_rx_hold_write(struct file *file, const char __user *ubuf,
				     size_t count, loff_t *ppos)
{
	char buf[IB_DEVICE_NAME_MAX + 8], *val;
	struct softrvt_dev_info *rdi;
	int ret = -ENODEV;
	bool hold;

	if (count >= sizeof(buf))
		return -EINVAL;
	if (copy_from_user(buf, ubuf, count))
		return -EFAULT;
	buf[count] = '\0';
	val = strchr(buf, ' ');
	if (!val)
		return -EINVAL;
	*val++ = '\0';
	if (kstrtobool(strim(val), &hold))
		return -EINVAL;

	mutex_lock(&softrvt_devices_lock);
	list_for_each_entry(rdi, &softrvt_devices, list) {
		if (dev_name(&rdi->ibdev.dev) &&
		    !strcmp(dev_name(&rdi->ibdev.dev), buf)) {
			softrvt_rx_hold(rdi, hold);
			ret = count;
			break;
		}
	}
	mutex_unlock(&softrvt_devices_lock);
	return ret;
}

static const struct file_operations softrvt_rx_hold_fops = {
	.owner = THIS_MODULE,
	.open = softrvt_rx_hold_open,
	.read = seq_read,
	.llseek = seq_lseek,
	.release = single_release,
	.write = softrvt_rx_hold_write,
};

/*
 * Every way a device goes (rdma link delete, its netdev's unregistration,
 * rmmod) ends in ib_core removing its clients from it, newest first, and
 * only then the device.  softrvt registers a client of its own for that
 * moment: registered after uverbs (the soft dependency below), it is
 * removed before, and fails the device's QPs while the processes that
 * hold them can still see their completions (softrvt_qp_fail_all()).
 */
static int softrvt_client_add(struct ib_device *ibdev)
{
	return softrvt_is_dev(ibdev) ? 0 : -EOPNOTSUPP;
}

static void softrvt_client_remove(struct ib_device *ibdev, void *client_data)
{
	softrvt_qp_fail_all(softrvt_to_dev(ibdev));
}

static struct ib_client softrvt_client = {
	.name = "softrvt",
	.no_kverbs_req = true,
	.add = softrvt_client_add,
	.remove = softrvt_client_remove,
};

static int __init softrvt_module_init(void)
{
	int ret;

	ret = softrvt_icrc_init();
	if (ret)
		return ret;
	ret = softrvt_engine_init();
	if (ret)
		goto err_icrc;
	ret = softrvt_net_init();
	if (ret)
		goto err_ruc;
	ret = ib_register_client(&softrvt_client);
	if (ret)
		goto err_net;
	ret = register_netdevice_notifier(&softrvt_netdev_notifier);
	if (ret)
		goto err_client;
	rdma_link_register(&softrvt_link_ops);
	softrvt_debugfs = debugfs_create_dir("softrvt", NULL);
	debugfs_create_file("rx_queued", 0400, softrvt_debugfs, NULL,
			    &softrvt_rx_queued_fops);
	debugfs_create_file("rx_hold", 0600, softrvt_debugfs, NULL,
			    &softrvt_rx_hold_fops);
	return 0;

err_client:
	ib_unregister_client(&softrvt_client);
err_net:
	softrvt_net_exit_all();
err_ruc:
	softrvt_engine_exit();
err_icrc:
	softrvt_icrc_exit();
	return ret;
}

static void __exit softrvt_module_exit(void)
{
	struct softrvt_dev_info *rdi;

	debugfs_remove_recursive(softrvt_debugfs);
	/* Waits for newlink calls in flight; none can start after it. */
	rdma_link_unregister(&softrvt_link_ops);
	unregister_netdevice_notifier(&softrvt_netdev_notifier);

	mutex_lock(&softrvt_devices_lock);
	while ((rdi = list_first_entry_or_null(&softrvt_devices,
					       struct softrvt_dev_info, list))) {
		list_del_init(&rdi->list);
		/* Keeps the memory if a dellink is unregistering it too. */
		get_device(&rdi->ibdev.dev);
		mutex_unlock(&softrvt_devices_lock);
		ib_unregister_device(&rdi->ibdev);
		put_device(&rdi->ibdev.dev);
		mutex_lock(&softrvt_devices_lock);
	}
	mutex_unlock(&softrvt_devices_lock);
	ib_unregister_client(&softrvt_client);
	softrvt_net_exit_all();
	softrvt_engine_exit();
	softrvt_icrc_exit();
}

module_init(softrvt_module_init);
module_exit(softrvt_module_exit);

MODULE_ALIAS_RDMA_LINK("softrvt");
/* uverbs' ib_client must come first: see softrvt_client. */
MODULE_SOFTDEP("pre: ib_uverbs");
MODULE_DESCRIPTION("softrvt: software RDMA device in the style of rdmavt");
MODULE_LICENSE("Dual BSD/GPL");
