/** RocketMQ 4.9's API differences are all in src/v4 (its whole Rmq): no shim here. */
package rmqlab.oracle;
