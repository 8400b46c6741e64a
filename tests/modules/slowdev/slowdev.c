// SPDX-License-Identifier: GPL-2.0
/*
 * slowdev: a test-only Ethernet device that transmits at a set rate.
 *
 * softmq's tests need a device that is slower than its senders, so that
 * packets queue in the qdisc (fairness, priority, ring-full drops, link
 * down and qdisc delete with packets queued).  slowdev is that device:
 *
 *   ip link add sd0 [numtxqueues N] type slowdev
 *
 * Every TX queue has a small FIFO and a soft hrtimer.  ndo_start_xmit()
 * appends to the FIFO and stops the TX queue once it holds fifo_len
 * packets; the timer takes packets off at rate_pps (per TX queue) and wakes
 * the queue as the FIFO drains, exactly the flow control of a real NIC
 * ring.  A transmitted packet is freed, or with loop=1 handed back to the
 * stack as received on the same device (dev_forward_skb()), so a capture
 * of incoming packets on sd0 sees when it really left.  The qdisc's output
 * order is visible on sd0's transmit tap (tcpdump -Q out) in both modes.
 *
 * ethtool -S sd0: per TX queue FIFO length, timer armed, queue stopped,
 * packets sent, flushed (close) and carrier errors.
 *
 * Carrier: "ip link set sd0 carrier off|on" (ndo_change_carrier).  While
 * the carrier is off the FIFO is flushed and counted in tx_carrier_errors.
 * Features: checksum offload and SG (so UDP GSO can be sent), no GSO: the
 * qdisc above sees GSO skbs, the device gets them segmented.
 *
 * Module parameters (writable at run time in /sys/module/slowdev/parameters,
 * read by every device on its next packet or timer tick):
 *   rate_pps  packets per second per TX queue (1..10000000, default 1000)
 *   fifo_len  FIFO length per TX queue in packets (1..4096, default 8)
 *   loop      0: free transmitted packets, 1: deliver them back as received
 */

#include <linux/etherdevice.h>
#include <linux/ethtool.h>
#include <linux/hrtimer.h>
#include <linux/ktime.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/netdevice.h>
#include <linux/skbuff.h>
#include <linux/slab.h>
#include <net/rtnetlink.h>

/*
 * ---- compat: every kernel-version difference lives here -------------------
 *
 * hrtimer_setup() replaced hrtimer_init() + ->function in 6.13, and
 * hrtimer_init() is gone in 7.x.  Kbuild probes the kernel's hrtimer.h and
 * defines SLOWDEV_HAVE_HRTIMER_SETUP (a feature test, not a version test,
 * so it also holds for distribution backports).
 */
#ifdef SLOWDEV_HAVE_HRTIMER_SETUP
#define slowdev_hrtimer_setup(t, fn, clock, mode) hrtimer_setup(t, fn, clock, mode)
#else
static inline void slowdev_hrtimer_setup(struct hrtimer *t,
					 enum hrtimer_restart (*fn)(struct hrtimer *),
					 clockid_t clock, enum hrtimer_mode mode)
{
	hrtimer_init(t, clock, mode);
	t->function = fn;
}
#endif

/* ---- parameters ------------------------------------------------------------ */

#define SLOWDEV_RATE_MAX	10000000U
#define SLOWDEV_FIFO_MAX	4096U
/* A tick never comes sooner than this; faster rates send several per tick. */
#define SLOWDEV_MIN_TICK_NS	(50 * NSEC_PER_USEC)

static unsigned int rate_pps = 1000;
module_param(rate_pps, uint, 0644);
MODULE_PARM_DESC(rate_pps, "packets per second per TX queue (1..10000000)");

static unsigned int fifo_len = 8;
module_param(fifo_len, uint, 0644);
MODULE_PARM_DESC(fifo_len, "FIFO length per TX queue, packets (1..4096)");

static bool loop;
module_param(loop, bool, 0644);
MODULE_PARM_DESC(loop, "deliver transmitted packets back as received on the same device");

static unsigned int slowdev_rate(void)
{
	return clamp(READ_ONCE(rate_pps), 1U, SLOWDEV_RATE_MAX);
}

static unsigned int slowdev_fifo_len(void)
{
	return clamp(READ_ONCE(fifo_len), 1U, SLOWDEV_FIFO_MAX);
}

/* ---- device ---------------------------------------------------------------- */

struct slowdev_txq {
	struct sk_buff_head	fifo;		/* its lock guards all below */
	struct hrtimer		timer;
	struct net_device	*dev;
	unsigned int		index;		/* TX queue number */
	u64			credit_ns;	/* time earned, not yet spent */
	ktime_t			last;		/* when credit_ns was updated */
	bool			armed;		/* timer queued or running */
	u64			packets;
	u64			bytes;
	u64			dropped;	/* flushed: carrier off, stop */
	u64			carrier_errors;
};

struct slowdev_priv {
	struct slowdev_txq	*txqs;
};

static u64 slowdev_period_ns(void)
{
	return div_u64(NSEC_PER_SEC, slowdev_rate());
}

/* Under the FIFO lock: drop everything queued (carrier off, close). */
static void slowdev_flush(struct slowdev_txq *sq, struct sk_buff_head *out,
			  bool carrier)
{
	u32 n = skb_queue_len(&sq->fifo);

	skb_queue_splice_tail_init(&sq->fifo, out);
	if (carrier)
		sq->carrier_errors += n;
	else
		sq->dropped += n;
	sq->credit_ns = 0;
}

static enum hrtimer_restart slowdev_tick(struct hrtimer *timer)
{
	struct slowdev_txq *sq = container_of(timer, struct slowdev_txq, timer);
	struct net_device *dev = sq->dev;
	struct netdev_queue *txq;
	struct sk_buff_head done;
	u64 period = slowdev_period_ns();
	unsigned long flags;
	struct sk_buff *skb;
	bool carrier, wake, restart;
	ktime_t now;

	__skb_queue_head_init(&done);
	carrier = netif_carrier_ok(dev);
	txq = netdev_get_tx_queue(dev, sq->index);

	spin_lock_irqsave(&sq->fifo.lock, flags);
	now = ktime_get();
	sq->credit_ns += ktime_to_ns(ktime_sub(now, sq->last));
	sq->last = now;
	if (!carrier) {
		slowdev_flush(sq, &done, true);
	} else {
		while (sq->credit_ns >= period &&
		       (skb = __skb_dequeue(&sq->fifo)) != NULL) {
			sq->credit_ns -= period;
			sq->packets++;
			sq->bytes += skb->len;
			__skb_queue_tail(&done, skb);
		}
	}
	/* No credit banked while idle: an idle device does not burst later. */
	if (skb_queue_empty(&sq->fifo)) {
		sq->armed = false;
		sq->credit_ns = 0;
	}
	/*
	 * Decided here, under the lock: once we clear armed, ndo_start_xmit
	 * may set it again and hrtimer_start() us while we still run; then
	 * we must neither forward nor restart the timer it queued.
	 */
	restart = sq->armed;
	wake = skb_queue_len(&sq->fifo) < slowdev_fifo_len();
	spin_unlock_irqrestore(&sq->fifo.lock, flags);

	if (wake && netif_tx_queue_stopped(txq) && netif_running(dev))
		netif_tx_wake_queue(txq);

	while ((skb = __skb_dequeue(&done)) != NULL) {
		if (loop && carrier)
			dev_forward_skb(dev, skb);
		else if (carrier)
			consume_skb(skb);
		else
			kfree_skb(skb);
	}

	if (!restart)
		return HRTIMER_NORESTART;
	hrtimer_forward_now(timer, ns_to_ktime(max_t(u64, period, SLOWDEV_MIN_TICK_NS)));
	return HRTIMER_RESTART;
}

static netdev_tx_t slowdev_xmit(struct sk_buff *skb, struct net_device *dev)
{
	struct slowdev_priv *priv = netdev_priv(dev);
	u16 qi = skb_get_queue_mapping(skb);
	struct netdev_queue *txq = netdev_get_tx_queue(dev, qi);
	struct slowdev_txq *sq = &priv->txqs[qi];
	unsigned long flags;
	bool start = false;

	skb_tx_timestamp(skb);
	spin_lock_irqsave(&sq->fifo.lock, flags);
	__skb_queue_tail(&sq->fifo, skb);
	if (skb_queue_len(&sq->fifo) >= slowdev_fifo_len())
		netif_tx_stop_queue(txq);
	if (!sq->armed) {
		sq->armed = true;
		sq->last = ktime_get();
		sq->credit_ns = 0;
		start = true;
	}
	spin_unlock_irqrestore(&sq->fifo.lock, flags);

	/*
	 * The callback may still be returning NORESTART after it cleared
	 * armed; starting it here re-queues it and hrtimer keeps it queued.
	 */
	if (start)
		hrtimer_start(&sq->timer,
			      ns_to_ktime(max_t(u64, slowdev_period_ns(), SLOWDEV_MIN_TICK_NS)),
			      HRTIMER_MODE_REL_SOFT);
	return NETDEV_TX_OK;
}

static void slowdev_flush_all(struct net_device *dev, bool carrier)
{
	struct slowdev_priv *priv = netdev_priv(dev);
	struct sk_buff_head done;
	unsigned long flags;
	unsigned int i;

	__skb_queue_head_init(&done);
	for (i = 0; i < dev->num_tx_queues; i++) {
		struct slowdev_txq *sq = &priv->txqs[i];

		spin_lock_irqsave(&sq->fifo.lock, flags);
		slowdev_flush(sq, &done, carrier);
		spin_unlock_irqrestore(&sq->fifo.lock, flags);
	}
	__skb_queue_purge(&done);
}

static int slowdev_open(struct net_device *dev)
{
	netif_tx_start_all_queues(dev);
	return 0;
}

static int slowdev_stop(struct net_device *dev)
{
	struct slowdev_priv *priv = netdev_priv(dev);
	unsigned int i;

	netif_tx_stop_all_queues(dev);
	for (i = 0; i < dev->num_tx_queues; i++) {
		struct slowdev_txq *sq = &priv->txqs[i];
		unsigned long flags;

		hrtimer_cancel(&sq->timer);
		spin_lock_irqsave(&sq->fifo.lock, flags);
		sq->armed = false;
		spin_unlock_irqrestore(&sq->fifo.lock, flags);
	}
	slowdev_flush_all(dev, false);
	return 0;
}

static int slowdev_change_carrier(struct net_device *dev, bool new_carrier)
{
	if (new_carrier) {
		netif_carrier_on(dev);
	} else {
		netif_carrier_off(dev);
		/* Queued packets are lost with the link; the timer stops. */
		slowdev_flush_all(dev, true);
	}
	return 0;
}

static void slowdev_get_stats64(struct net_device *dev,
				struct rtnl_link_stats64 *stats)
{
	struct slowdev_priv *priv = netdev_priv(dev);
	unsigned int i;

	if (!priv->txqs)
		return;
	for (i = 0; i < dev->num_tx_queues; i++) {
		struct slowdev_txq *sq = &priv->txqs[i];
		unsigned long flags;

		spin_lock_irqsave(&sq->fifo.lock, flags);
		stats->tx_packets += sq->packets;
		stats->tx_bytes += sq->bytes;
		stats->tx_dropped += sq->dropped + sq->carrier_errors;
		stats->tx_carrier_errors += sq->carrier_errors;
		spin_unlock_irqrestore(&sq->fifo.lock, flags);
	}
}

/* ethtool -S: the state of every TX queue, for tests that need to know why. */
static const char * const slowdev_stat_names[] = {
	"fifo", "armed", "stopped", "packets", "flushed", "carrier_errors",
};

#define SLOWDEV_NSTATS	ARRAY_SIZE(slowdev_stat_names)

static int slowdev_get_sset_count(struct net_device *dev, int sset)
{
	if (sset != ETH_SS_STATS)
		return -EOPNOTSUPP;
	return dev->num_tx_queues * SLOWDEV_NSTATS;
}

static void slowdev_get_strings(struct net_device *dev, u32 sset, u8 *data)
{
	unsigned int i, j;

	if (sset != ETH_SS_STATS)
		return;
	for (i = 0; i < dev->num_tx_queues; i++)
		for (j = 0; j < SLOWDEV_NSTATS; j++)
			ethtool_sprintf(&data, "tx%u_%s", i, slowdev_stat_names[j]);
}

static void slowdev_get_ethtool_stats(struct net_device *dev,
				      struct ethtool_stats *stats, u64 *data)
{
	struct slowdev_priv *priv = netdev_priv(dev);
	unsigned int i;

	for (i = 0; i < dev->num_tx_queues; i++) {
		struct slowdev_txq *sq = &priv->txqs[i];
		unsigned long flags;

		spin_lock_irqsave(&sq->fifo.lock, flags);
		*data++ = skb_queue_len(&sq->fifo);
		*data++ = sq->armed;
		*data++ = netif_tx_queue_stopped(netdev_get_tx_queue(dev, i));
		*data++ = sq->packets;
		*data++ = sq->dropped;
		*data++ = sq->carrier_errors;
		spin_unlock_irqrestore(&sq->fifo.lock, flags);
	}
}

static const struct ethtool_ops slowdev_ethtool_ops = {
	.get_link		= ethtool_op_get_link,
	.get_sset_count		= slowdev_get_sset_count,
	.get_strings		= slowdev_get_strings,
	.get_ethtool_stats	= slowdev_get_ethtool_stats,
};

static int slowdev_dev_init(struct net_device *dev)
{
	struct slowdev_priv *priv = netdev_priv(dev);
	unsigned int i;

	priv->txqs = kcalloc(dev->num_tx_queues, sizeof(*priv->txqs), GFP_KERNEL);
	if (!priv->txqs)
		return -ENOMEM;
	for (i = 0; i < dev->num_tx_queues; i++) {
		struct slowdev_txq *sq = &priv->txqs[i];

		skb_queue_head_init(&sq->fifo);
		sq->dev = dev;
		sq->index = i;
		slowdev_hrtimer_setup(&sq->timer, slowdev_tick, CLOCK_MONOTONIC,
				      HRTIMER_MODE_REL_SOFT);
	}
	return 0;
}

static void slowdev_dev_uninit(struct net_device *dev)
{
	struct slowdev_priv *priv = netdev_priv(dev);
	unsigned int i;

	/* ndo_stop ran if the device was up; this covers a failed open. */
	for (i = 0; i < dev->num_tx_queues; i++)
		hrtimer_cancel(&priv->txqs[i].timer);
	slowdev_flush_all(dev, false);
	kfree(priv->txqs);
	priv->txqs = NULL;
}

static const struct net_device_ops slowdev_netdev_ops = {
	.ndo_init		= slowdev_dev_init,
	.ndo_uninit		= slowdev_dev_uninit,
	.ndo_open		= slowdev_open,
	.ndo_stop		= slowdev_stop,
	.ndo_start_xmit		= slowdev_xmit,
	.ndo_validate_addr	= eth_validate_addr,
	.ndo_set_mac_address	= eth_mac_addr,
	.ndo_get_stats64	= slowdev_get_stats64,
	.ndo_change_carrier	= slowdev_change_carrier,
};

static void slowdev_setup(struct net_device *dev)
{
	ether_setup(dev);
	dev->netdev_ops = &slowdev_netdev_ops;
	dev->ethtool_ops = &slowdev_ethtool_ops;
	dev->needs_free_netdev = true;
	dev->priv_flags &= ~IFF_TX_SKB_SHARING;
	dev->flags |= IFF_NOARP;
	dev->flags &= ~IFF_MULTICAST;
	/*
	 * Checksum offload (there is no wire: nothing to compute) and
	 * scatter-gather, so UDP GSO (UDP_SEGMENT) can be sent through it;
	 * no GSO feature: the core segments after the qdisc, so the qdisc
	 * sees GSO skbs and the FIFO and the rate count wire packets.
	 */
	dev->features |= NETIF_F_SG | NETIF_F_HW_CSUM | NETIF_F_HIGHDMA;
	dev->hw_features |= NETIF_F_SG | NETIF_F_HW_CSUM;
	eth_hw_addr_random(dev);
}

static struct rtnl_link_ops slowdev_link_ops __read_mostly = {
	.kind		= "slowdev",
	.priv_size	= sizeof(struct slowdev_priv),
	.setup		= slowdev_setup,
};

static int __init slowdev_init(void)
{
	return rtnl_link_register(&slowdev_link_ops);
}

static void __exit slowdev_exit(void)
{
	rtnl_link_unregister(&slowdev_link_ops);
}

module_init(slowdev_init);
module_exit(slowdev_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("softmq tests: an Ethernet device that transmits at a set packet rate");
MODULE_ALIAS_RTNL_LINK("slowdev");
